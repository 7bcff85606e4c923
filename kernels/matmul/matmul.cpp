// matmul.cpp: the binding of matmul: checks a and b, makes them contiguous, calls the torch-free kernels in
// matmul_cpu.cpp / matmul.cu, and registers them as labkit::matmul and labkit::matmul_version (schemas in
// op.py). The gradient is here too, in C++, and is itself two matmuls.
#include "binding.h"
#include <array>
#include <tuple>

#include "autograd.h"
#include "matmul.h"

// Floating-point matrices of one dtype, on one device, with a's columns matching b's rows.
static DType check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = kit_dtype(op, "a", a);
    kit_dtype(op, "b", b);
    check_same_device(op, "a", a, "b", b);
    check_same_dtype(op, "a", a, "b", b);
    check_matmul_shapes(op, a, b);
    return dtype;
}

// ----------------------------------------------------------------------------------------------
// CPU. Transposed or sliced views are copied to contiguous ones first: the kernels walk raw rows.

static at::Tensor matmul_cpu_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("matmul", a, b);
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    at::Tensor c = at::empty({M, N}, a.options());
    if (M == 0 || N == 0) return c;
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    matmul_cpu(dtype, c.data_ptr(), ac.data_ptr(), bc.data_ptr(), M, N, K);
    return c;
}

static at::Tensor matmul_version_cpu_impl(const at::Tensor& a, const at::Tensor&, int64_t) {
    TORCH_CHECK(false, "matmul(version=...) runs the lesson's GPU kernels and has no CPU version; a is on ", a.device(),
                ". Use CUDA tensors, or the default version.");
}

static int64_t matmul_choice_cpu_impl(const at::Tensor& a, const at::Tensor& b) {
    check_inputs("matmul", a, b);
    return 0;  // the CPU kernel (matmul_cpu.cpp)
}

static int64_t matmul_splits_cpu_impl(const at::Tensor& a, const at::Tensor& b) {
    check_inputs("matmul", a, b);
    return 1;  // the CPU kernel walks all of K
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("matmul", &matmul_cpu_impl);
    m.impl("matmul_version", &matmul_version_cpu_impl);
    m.impl("matmul_choice", &matmul_choice_cpu_impl);
    m.impl("matmul_splits", &matmul_splits_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// Autograd, for every device. C = A B, so dL/dA = dC B^T (M x N times N x K) and dL/dB = A^T dC (K x M times
// M x N): two more matmuls, through the dispatcher on transposed views (the kernels get contiguous copies).
// Called above autograd, so a second derivative works too.

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

static at::Tensor matmul_op(const at::Tensor& a, const at::Tensor& b) {
    static const auto op = typed_op<at::Tensor(const at::Tensor&, const at::Tensor&)>("labkit::matmul");
    return op.call(a, b);
}

struct MatmulFunction : torch::autograd::Function<MatmulFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
        ctx->save_for_backward({a, b});
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return matmul_op(a, b);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const at::Tensor &a = saved[0], &b = saved[1], &dc = grads[0];
        at::Tensor da, db;
        if (ctx->needs_input_grad(0)) da = matmul_op(dc, b.t());
        if (ctx->needs_input_grad(1)) db = matmul_op(a.t(), dc);
        return {da, db};
    }
};

static at::Tensor matmul_autograd_impl(const at::Tensor& a, const at::Tensor& b) {
    if (wants_grad(a, b)) return MatmulFunction::apply(a, b);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return matmul_op(a, b);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) { m.impl("matmul", &matmul_autograd_impl); }

// ----------------------------------------------------------------------------------------------
// CUDA: the guard makes a's GPU current; launches go to its current stream.
#ifdef LABKIT_WITH_CUDA

// a and b as `version` can read them: rows of consecutive elements, a multiple of 16 bytes apart, from a
// 16-byte-aligned start, as TMA reads them. Each itself where it is so (a slice of a wider matrix included: its rows
// keep their stride); a itself also where its rows are consecutive elements that the version reads through eight
// tensor maps (matmul_reads_a_by_residue: 4095 x 4093); else one copy whose rows are padded to a multiple of 64
// elements (128 bytes: TMA reads rows that start on a 128-byte line ~10% faster than rows only 16 bytes aligned,
// measured on an H200 at 4093 x 4097): its first m.size(1) columns are m's, the rest never read (a tensor map's edge
// is the true width; it reads zeros past it). Rows of consecutive elements are copied by matmul_pad_rows, a's and b's
// in one launch, in 16-byte pieces; others (a transposed view) by torch's copy_.
static std::pair<at::Tensor, at::Tensor> tma_readable(const at::Tensor& a, const at::Tensor& b, int version) {
    std::array<at::Tensor, 2> out = {a, b};
    std::array<MatmulPadJob, 2> jobs{};
    int count = 0;
    for (size_t i = 0; i < out.size(); i++) {
        at::Tensor& m = out[i];
        const int64_t cols = m.size(1);
        const bool plain_rows = (m.stride(1) == 1 || cols == 1) && m.stride(0) >= cols;  // each row consecutive
        if (plain_rows && matmul_tma_readable(m.data_ptr(), m.stride(0))) continue;
        if (plain_rows && i == 0 && matmul_reads_a_by_residue(version, m.size(0))) continue;  // a, through 8 maps
        at::Tensor padded = at::empty({m.size(0), (cols + 63) / 64 * 64}, m.options());
        if (plain_rows) {
            jobs[count++] = {padded.data_ptr(), padded.stride(0), m.data_ptr(), m.stride(0), m.size(0), cols};
        } else {
            padded.narrow(1, 0, cols).copy_(m);
        }
        m = padded;
    }
    if (count > 0) check_launch("matmul_pad_rows_kernel", matmul_pad_rows(jobs.data(), count, current_stream()));
    return {out[0], out[1]};
}

static at::Tensor matmul_cuda_run(DType dtype, const at::Tensor& a, const at::Tensor& b, int version) {
    const c10::cuda::CUDAGuard guard(a.device());
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    at::Tensor c = at::empty({M, N}, a.options());
    if (M == 0 || N == 0) return c;
    if (K == 0) return c.zero_();  // empty sums are 0; a grid of 0 blocks is invalid
    if (version == kMatmulFast) version = matmul_fast_version(dtype, M, N, K, a.get_device());
    at::Tensor ac, bc;
    if (matmul_reads_by_tma(version, dtype)) {  // TMA reads the matrices where they are, if it can
        std::tie(ac, bc) = tma_readable(a, b, version);
    } else {  // the other kernels walk rows of exactly K and N elements
        ac = a.contiguous();
        bc = b.contiguous();
    }
    // split-K's partial products, in float: splits x M x N, from the caching allocator (no cudaMalloc per call)
    const int splits = matmul_splits(version, dtype, M, N, K, a.get_device());
    const at::Tensor parts = splits > 1 ? at::empty({splits, M, N}, a.options().dtype(at::kFloat)) : at::Tensor();
    check_launch("matmul kernel", matmul_cuda(version, dtype, c.data_ptr(), ac.data_ptr(), bc.data_ptr(), M, N, K,
                                              ac.stride(0), bc.stride(0), a.get_device(), current_stream(),
                                              splits > 1 ? parts.data_ptr<float>() : nullptr, splits));
    return c;
}

static at::Tensor matmul_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    return matmul_cuda_run(check_inputs("matmul", a, b), a, b, kMatmulFast);
}

static at::Tensor matmul_version_cuda_impl(const at::Tensor& a, const at::Tensor& b, int64_t version) {
    const char* op = "matmul(version=...)";
    TORCH_CHECK_VALUE(version >= kMatmulNaive && version <= kMatmulSplitK,
                      "matmul_version: version must be 1 "
                      "(naive), 2 (coalesced), 3 (smem), 4 (reg1d), 5 (reg2d), 6 (vec), 7 (wmma), 8 (wgmma), "
                      "9 (warpspec), 10 (wide), 11 (persistent), 12 (tall), 13 (warptile), 14 (pipelined) or "
                      "15 (splitk); got ",
                      version);
    const DType dtype = check_inputs(op, a, b);
    const bool tensor_cores = version == kMatmulWmma || matmul_is_hopper(int(version));
    if (version == kMatmulSplitK) {
        TORCH_CHECK_TYPE(dtype != DType::f64, op, ": split-K (15) takes float32, float16 or bfloat16, but a is ",
                         a.scalar_type());
    } else if (tensor_cores) {
        TORCH_CHECK_TYPE(dtype == DType::f16 || dtype == DType::bf16, op,
                         ": the tensor-core versions 7-12 take "
                         "float16 or bfloat16 only, but a is ",
                         a.scalar_type());
    } else {
        TORCH_CHECK_TYPE(dtype == DType::f32, op, ": the lesson's versions 1-6 and 13-14 take float32 only, but a is ",
                         a.scalar_type(),
                         " (7-12 take float16 and bfloat16, 15 all three; the default takes every dtype)");
    }
    if (version == kMatmulWmma) {
        TORCH_CHECK(matmul_wmma_supported(a.get_device()), op,
                    ": version \"wmma\" needs a GPU of "
                    "compute capability 8.0 (Ampere) or newer; ",
                    a.device(), " is older");
    } else if (matmul_reads_by_tma(int(version), dtype)) {
        const c10::cuda::CUDAGuard guard(a.device());
        TORCH_CHECK(matmul_hopper_available(a.get_device()), op,
                    ": versions 8-12 and 15 in 16 bits (wgmma, TMA) need a Hopper GPU "
                    "(compute capability 9.0) and the op built for sm_90a (TORCH_CUDA_ARCH_LIST=9.0a, or unset on a "
                    "machine with a Hopper GPU); ",
                    a.device(), " cannot run them");
    }
    return matmul_cuda_run(dtype, a, b, int(version));
}

// The version matmul_cuda_impl would run for a and b (matmul.cu's matmul_fast_version).
static int64_t matmul_choice_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("matmul", a, b);
    const c10::cuda::CUDAGuard guard(a.device());
    return matmul_fast_version(dtype, a.size(0), b.size(1), a.size(1), a.get_device());
}

// How many ranges of k that version cuts a @ b into (matmul.cu's matmul_splits): 1 but for split-K.
static int64_t matmul_splits_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("matmul", a, b);
    const c10::cuda::CUDAGuard guard(a.device());
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    return matmul_splits(matmul_fast_version(dtype, M, N, K, a.get_device()), dtype, M, N, K, a.get_device());
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("matmul", &matmul_cuda_impl);
    m.impl("matmul_version", &matmul_version_cuda_impl);
    m.impl("matmul_choice", &matmul_choice_cuda_impl);
    m.impl("matmul_splits", &matmul_splits_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
