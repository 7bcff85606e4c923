// sum.cpp: the binding of sum: checks the tensor and dim, turns the sum into rows x cols, calls the torch-free
// launchers in sum_cpu.cpp / sum.cu, and registers them as the kernels of labkit::sum and labkit::sum_version
// (schemas in op.py). The gradient is here too, in C++.
#include "binding.h"
#include "autograd.h"
#include "sum.h"

// A sum of rows: the whole tensor is one row; dim=-1 makes each run of size(-1) elements a row.
struct RowsView {
    int64_t rows, cols;
    std::vector<int64_t> out_shape;
};

static RowsView rows_view(const at::Tensor& x, std::optional<int64_t> dim) {
    if (!dim) return {1, x.numel(), {}};
    const int64_t last = x.dim() == 0 ? 0 : x.dim() - 1;
    TORCH_CHECK_INDEX(*dim == -1 || *dim == last,
                      "sum: dim must be None (every element) or the last dimension "
                      "(-1 or ",
                      last, "), but got dim=", *dim, " for x of shape ", x.sizes(),
                      ". To sum over another dimension, move it last first: ops.sum(x.movedim(d, -1), dim=-1)");
    if (x.dim() == 0) return {1, 1, {}};
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
    int64_t rows = 1;
    for (const int64_t s : shape) rows *= s;
    return {rows, x.size(-1), shape};
}

// ----------------------------------------------------------------------------------------------
// CPU. A non-contiguous input (a transposed or sliced view) is copied to a contiguous one first: the kernels
// walk raw memory in order.

static at::Tensor sum_cpu_impl(const at::Tensor& x, std::optional<int64_t> dim) {
    const DType dtype = kit_dtype("sum", "x", x);
    const RowsView v = rows_view(x, dim);
    at::Tensor out = at::empty(v.out_shape, x.options());
    if (v.rows == 0) return out;
    const at::Tensor xc = x.contiguous();
    sum_rows_cpu(dtype, out.data_ptr(), xc.data_ptr(), v.rows, v.cols);
    return out;
}

static at::Tensor sum_version_cpu_impl(const at::Tensor& x, int64_t) {
    TORCH_CHECK(false, "sum(version=...) runs the lesson's GPU kernels and has no CPU version; x is on ", x.device(),
                ". Use a CUDA tensor, or the default version.");
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("sum", &sum_cpu_impl);
    m.impl("sum_version", &sum_version_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// Autograd, for every device: each element adds to its sum with weight 1, so the gradient of every element is
// its sum's incoming gradient: grad broadcast back to x's shape (a view, no copy). Through ATen's own ops, so
// a second derivative works too.

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

static at::Tensor sum_op(const at::Tensor& x, std::optional<int64_t> dim) {
    static const auto op = typed_op<at::Tensor(const at::Tensor&, std::optional<int64_t>)>("labkit::sum");
    return op.call(x, dim);
}

struct SumFunction : torch::autograd::Function<SumFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::optional<int64_t> dim) {
        ctx->saved_data["sizes"] = x.sizes().vec();
        ctx->saved_data["per_row"] = dim.has_value() && x.dim() > 0;
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return sum_op(x, dim);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
        const at::Tensor g = ctx->saved_data["per_row"].toBool() ? grads[0].unsqueeze(-1) : grads[0];
        return {g.expand(sizes), at::Tensor()};
    }
};

static at::Tensor sum_autograd_impl(const at::Tensor& x, std::optional<int64_t> dim) {
    if (wants_grad(x)) return SumFunction::apply(x, dim);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return sum_op(x, dim);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) { m.impl("sum", &sum_autograd_impl); }

// ----------------------------------------------------------------------------------------------
// CUDA: the guard makes x's GPU current; launches go to its current stream. The partial sums of split rows
// go to a workspace from PyTorch's caching allocator (no cudaMalloc per call).
#ifdef LABKIT_WITH_CUDA

static at::Tensor sum_cuda_impl(const at::Tensor& x, std::optional<int64_t> dim) {
    const DType dtype = kit_dtype("sum", "x", x);
    const RowsView v = rows_view(x, dim);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor out = at::empty(v.out_shape, x.options());
    if (v.rows == 0) return out;
    if (v.cols == 0) return out.zero_();  // rows of no elements sum to 0; a grid of 0 blocks is invalid
    const at::Tensor xc = x.contiguous();
    const int device = x.get_device();
    const int64_t bytes = sum_rows_workspace_bytes(dtype, v.rows, v.cols, device);
    at::Tensor work = bytes ? at::empty({bytes}, x.options().dtype(at::kByte)) : at::Tensor();
    check_launch("sum_rows_kernel", sum_rows_cuda(dtype, out.data_ptr(), xc.data_ptr(), v.rows, v.cols,
                                                  bytes ? work.data_ptr() : nullptr, device, current_stream()));
    return out;
}

static at::Tensor sum_version_cuda_impl(const at::Tensor& x, int64_t version) {
    TORCH_CHECK_VALUE(version >= 1 && version <= 4,
                      "sum_version: version must be 1 (atomic), 2 (interleaved), "
                      "3 (sequential) or 4 (warp); version 5 is ops.sum itself; got ",
                      version);
    TORCH_CHECK_TYPE(kit_dtype("sum(version=...)", "x", x) == DType::f32,
                     "sum(version=...): the lesson's "
                     "versions 1-4 take float32 only, but x is ",
                     x.scalar_type());
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor out = at::empty({}, x.options());
    if (x.numel() == 0) return out.zero_();
    const at::Tensor xc = x.contiguous();
    const int64_t bytes = sum_version_workspace_bytes(int(version), x.numel());
    at::Tensor work = bytes ? at::empty({bytes}, x.options().dtype(at::kByte)) : at::Tensor();
    check_launch("sum version kernel",
                 sum_version_cuda(int(version), out.data_ptr<float>(), xc.data_ptr<float>(), x.numel(),
                                  bytes ? static_cast<float*>(work.data_ptr()) : nullptr, current_stream()));
    return out;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("sum", &sum_cuda_impl);
    m.impl("sum_version", &sum_version_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
