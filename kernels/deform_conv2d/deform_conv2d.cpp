// deform_conv2d.cpp: the binding of deform_conv2d: checks the tensors and sizes, cuts the batch into chunks, calls
// the torch-free sampling kernels (deform_conv2d_cpu.cpp, deform_conv2d.cu) between the matmuls, and registers it all as
// labkit::deform_conv2d and labkit::deform_conv2d_backward (schemas in op.py). The gradient is here too, in C++.
//
// One chunk of n images, forward (K = C_in / weight_groups * kh * kw, L = OH * OW):
//   columns (C_in * kh * kw, n * L)  = im2col(input, offset, mask)                     the kernels' part
//   out (n, C_out, OH, OW)          <- weight (G, C_out / G, K) @ columns (G, K, n * L), + bias   one bmm: G groups
// Backward, per chunk, the same in reverse:
//   grad_columns = weight^T @ grad_out                      (G, K, C_out / G) @ (G, C_out / G, n * L)
//   grad_offset, grad_mask = coord_grad(grad_columns, input, offset, mask)
//   grad_input += col2im(grad_columns, offset, mask)
//   columns = im2col(input, offset, mask) again (not kept from the forward: that would hold the whole batch's)
//   grad_weight += grad_out @ columns^T
//   and grad_bias = grad_out summed over images and pixels.
// On the CPU the sampling kernels are deform_conv2d_cpu.cpp's and the matmuls ATen's (at::bmm: a BLAS call); on the
// GPU the kernels are deform_conv2d.cu's and the matmuls the kit's own (labkit::matmul, lesson 07: tensor cores)
// in float16 and bfloat16, cuBLAS in float32 and float64 (group_matmul says why). The chunk loop and the checks
// are the same for both.
//
// Dtypes: the four float types, one for every tensor. The gradients of input and weight are summed in float for
// float16 and bfloat16 and rounded to the dtype once at the end; the columns are float on the CPU and of the dtype on
// the GPU (column_type).
#include "binding.h"
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <vector>
#include <ATen/ops/bmm.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>

#include "autograd.h"
#include "deform_conv2d.h"

// The column buffer is the op's one large allocation: C_in * kh * kw * L values per image (38 MB in float for a
// 256-channel 3 x 3 layer at 64 x 64, deform_conv2d_cpu.cpp), so a whole batch at once can reach gigabytes. The
// batch is cut into chunks of as many images as fit under this cap (one image at least, whatever its size); the
// backward reuses the same buffer for grad_columns and then columns. 1 GiB keeps it well inside a machine's memory,
// and bigger chunks would not make the matmul faster: one image already gives it thousands of columns (on the
// 2-core machine that layer's 256 x 2304 x 4096 at::bmm ran at 179 GFLOP/s for one image, 168 for two, 136 for
// eight at once). (torchvision chunks by at most 32 images, whatever their size.)
constexpr int64_t kColumnBytesCap = int64_t(1) << 30;

// The cap in force: kColumnBytesCap, or the bytes that $LABKIT_DEFORM_CONV2D_COLUMN_BYTES names, read on each call:
// the tests set a few KiB so that a small batch takes several chunks, and a machine short of memory can set less.
static int64_t column_bytes_cap() {
    const char* env = std::getenv("LABKIT_DEFORM_CONV2D_COLUMN_BYTES");
    if (env == nullptr || *env == '\0') return kColumnBytesCap;
    char* end = nullptr;
    const long long bytes = std::strtoll(env, &end, 10);
    TORCH_CHECK_VALUE(*end == '\0' && bytes > 0,
                      "deform_conv2d: LABKIT_DEFORM_CONV2D_COLUMN_BYTES must be a positive number of bytes, but is '",
                      env, "'");
    return bytes;
}

// ----------------------------------------------------------------------------------------------
// Checks, shared by both ops; messages name the argument. op.py's fake kernels make the same checks with the same
// messages, so torch.compile reports the same errors.

// An optional tensor that holds one (a caller in C++ may pass an undefined tensor for "none").
static bool defined(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

static void check_device_and_dtype(const char* op, const at::Tensor& input, const char* name, const at::Tensor& t) {
    check_same_device(op, "input", input, name, t);
    check_same_dtype(op, "input", input, name, t);
}

static void check_dims(const char* op, const char* name, const at::Tensor& t, int64_t dims, const char* layout) {
    TORCH_CHECK_VALUE(t.dim() == dims, op, ": ", name, " must be ", dims, "-D ", layout, ", but has shape ", t.sizes());
}

static DeformConv2dShape check_inputs(const char* op, const at::Tensor& input, const at::Tensor& offset,
                                      const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                                      const std::optional<at::Tensor>& mask, int64_t stride_h, int64_t stride_w,
                                      int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w) {
    kit_dtype(op, "input", input);
    check_device_and_dtype(op, input, "offset", offset);
    check_device_and_dtype(op, input, "weight", weight);
    const bool has_bias = defined(bias), has_mask = defined(mask);
    if (has_bias) check_device_and_dtype(op, input, "bias", *bias);
    if (has_mask) check_device_and_dtype(op, input, "mask", *mask);
    check_dims(op, "input", input, 4, "(N, C_in, H, W)");
    check_dims(op, "weight", weight, 4, "(C_out, C_in / weight_groups, kernel_h, kernel_w)");
    check_dims(op, "offset", offset, 4, "(N, 2 * offset_groups * kernel_h * kernel_w, out_h, out_w)");
    if (has_mask) check_dims(op, "mask", *mask, 4, "(N, offset_groups * kernel_h * kernel_w, out_h, out_w)");
    if (has_bias) check_dims(op, "bias", *bias, 1, "(C_out,)");
    TORCH_CHECK_VALUE(stride_h > 0 && stride_w > 0, op, ": stride must be positive, but is (", stride_h, ", ", stride_w,
                      ")");
    TORCH_CHECK_VALUE(pad_h >= 0 && pad_w >= 0, op, ": padding must not be negative, but is (", pad_h, ", ", pad_w,
                      ")");
    TORCH_CHECK_VALUE(dilation_h > 0 && dilation_w > 0, op, ": dilation must be positive, but is (", dilation_h, ", ",
                      dilation_w, ")");

    const int64_t n = input.size(0), in_channels = input.size(1), height = input.size(2), width = input.size(3);
    const int64_t out_channels = weight.size(0), kernel_h = weight.size(2), kernel_w = weight.size(3);
    TORCH_CHECK_VALUE(in_channels > 0, op, ": input must have at least one channel, but has shape ", input.sizes());
    TORCH_CHECK_VALUE(kernel_h > 0 && kernel_w > 0, op, ": the kernel must be at least 1 x 1, but weight has shape ",
                      weight.sizes());
    TORCH_CHECK_VALUE(weight.size(1) > 0 && in_channels % weight.size(1) == 0, op,
                      ": weight.shape[1] (input channels per weight group) must divide input's C_in = ", in_channels,
                      ", but weight has shape ", weight.sizes());
    const int64_t weight_groups = in_channels / weight.size(1);
    TORCH_CHECK_VALUE(out_channels % weight_groups == 0, op, ": weight's C_out = ", out_channels,
                      " must be a multiple of the weight groups, C_in / weight.shape[1] = ", weight_groups);
    const int64_t taps = kernel_h * kernel_w;
    TORCH_CHECK_VALUE(offset.size(1) > 0 && offset.size(1) % (2 * taps) == 0, op,
                      ": offset.shape[1] must be a positive multiple of 2 * kernel_h * kernel_w = ", 2 * taps,
                      " (a dy and a dx per tap and offset group), but offset has shape ", offset.sizes());
    const int64_t offset_groups = offset.size(1) / (2 * taps);
    TORCH_CHECK_VALUE(in_channels % offset_groups == 0, op,
                      ": the offset groups, offset.shape[1] / (2 * kernel_h * kernel_w) = ", offset_groups,
                      ", must divide input's C_in = ", in_channels);

    const int64_t reach_h = dilation_h * (kernel_h - 1) + 1, reach_w = dilation_w * (kernel_w - 1) + 1;
    TORCH_CHECK_VALUE(height + 2 * pad_h >= reach_h && width + 2 * pad_w >= reach_w, op,
                      ": the output would be empty: the padded input is ", height + 2 * pad_h, " x ", width + 2 * pad_w,
                      " but the dilated kernel spans ", reach_h, " x ", reach_w);
    // the GPU kernels' grids walk a group's channels in slices of 8 along y (at most 65535 slices)
    TORCH_CHECK_VALUE(!input.is_cuda() || in_channels / offset_groups <= int64_t(65535) * 8, op,
                      ": on the GPU an offset group holds at most 524280 input channels, but has ",
                      in_channels / offset_groups);
    const int64_t out_h = (height + 2 * pad_h - reach_h) / stride_h + 1;
    const int64_t out_w = (width + 2 * pad_w - reach_w) / stride_w + 1;
    TORCH_CHECK_VALUE(offset.size(0) == n && offset.size(2) == out_h && offset.size(3) == out_w, op,
                      ": offset must have shape (N, 2 * offset_groups * kernel_h * kernel_w, out_h, out_w) = (", n,
                      ", ", offset.size(1), ", ", out_h, ", ", out_w, "), but has shape ", offset.sizes());
    if (has_mask) {
        TORCH_CHECK_VALUE(mask->size(0) == n && mask->size(1) == offset_groups * taps && mask->size(2) == out_h &&
                              mask->size(3) == out_w,
                          op, ": mask must have shape (N, offset_groups * kernel_h * kernel_w, out_h, out_w) = (", n,
                          ", ", offset_groups * taps, ", ", out_h, ", ", out_w, "), but has shape ", mask->sizes());
    }
    if (has_bias) {
        TORCH_CHECK_VALUE(bias->size(0) == out_channels, op, ": bias must have shape (C_out,) = (", out_channels,
                          ",), but has shape ", bias->sizes());
    }
    DeformConv2dShape s{};
    s.batch = n;
    s.in_channels = in_channels;
    s.height = height;
    s.width = width;
    s.out_channels = out_channels;
    s.kernel_h = kernel_h;
    s.kernel_w = kernel_w;
    s.stride_h = stride_h;
    s.stride_w = stride_w;
    s.pad_h = pad_h;
    s.pad_w = pad_w;
    s.dilation_h = dilation_h;
    s.dilation_w = dilation_w;
    s.out_height = out_h;
    s.out_width = out_w;
    s.weight_groups = weight_groups;
    s.offset_groups = offset_groups;
    s.has_mask = has_mask;
    return s;
}

static void check_grad_out(const at::Tensor& grad_out, const at::Tensor& input, const DeformConv2dShape& s) {
    const char* op = "deform_conv2d_backward";
    check_same_device(op, "grad_out", grad_out, "input", input);
    check_same_dtype(op, "grad_out", grad_out, "input", input);
    TORCH_CHECK_VALUE(grad_out.dim() == 4 && grad_out.size(0) == s.batch && grad_out.size(1) == s.out_channels &&
                          grad_out.size(2) == s.out_height && grad_out.size(3) == s.out_width,
                      op, ": grad_out must have the output's shape (N, C_out, out_h, out_w) = (", s.batch, ", ",
                      s.out_channels, ", ", s.out_height, ", ", s.out_width, "), but has shape ", grad_out.sizes());
}

// ----------------------------------------------------------------------------------------------
// The computation, for both devices: the chunk loop, the kernels of the tensors' device and the matmuls.

// What the column buffer (and the gradient of the columns) holds. On the CPU: double for float64, else float (a
// 16-bit column would round every sample before the matmul). On the GPU: the dtype itself, since for float16 and
// bfloat16 the matmul is the kit's tensor-core one, which multiplies 16-bit matrices (as torchvision's cuBLAS
// call does); each sample is rounded once, when stored.
static at::ScalarType column_type(const at::Tensor& t) {
    if (t.is_cuda()) return t.scalar_type();
    return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// What the gradients of input and weight are summed in: double for float64, else float (on both devices).
static at::ScalarType sum_type(const at::Tensor& t) {
    return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// Images per chunk: as many as keep the column buffer under the cap, at least one, at most the batch (>= 1).
static int64_t chunk_images(const DeformConv2dShape& s, at::ScalarType columns) {
    const int64_t bytes = int64_t(c10::elementSize(columns));
    const int64_t per_image = s.in_channels * s.kernel_h * s.kernel_w * s.out_height * s.out_width * bytes;
    const int64_t fit = per_image > 0 ? column_bytes_cap() / per_image : s.batch;
    return std::max<int64_t>(1, std::min(s.batch, fit));
}

// The n images from b0 on: a tensor's slice (its data pointer), and the shape the kernels see.
static void* images(const at::Tensor& t, int64_t b0, int64_t n) {
    return t.defined() ? t.narrow(0, b0, n).data_ptr() : nullptr;
}
static DeformConv2dShape part(DeformConv2dShape s, int64_t n) {
    s.batch = n;
    return s;
}

// The three kernels on the device of `on`: deform_conv2d_cpu.cpp's or deform_conv2d.cu's (on the current stream
// of the device the caller's guard made current, the launch checked).
static void im2col(const at::Tensor& on, DType dtype, void* columns, const void* input, const void* offset,
                   const void* mask, const DeformConv2dShape& s) {
#ifdef LABKIT_WITH_CUDA
    if (on.is_cuda()) {
        check_launch("deform_conv2d_im2col",
                     deform_conv2d_im2col_cuda(dtype, columns, input, offset, mask, s, current_stream()));
        return;
    }
#endif
    deform_conv2d_im2col_cpu(dtype, columns, input, offset, mask, s);
}

static void col2im(const at::Tensor& on, DType dtype, void* grad_input, const void* grad_columns, const void* offset,
                   const void* mask, const DeformConv2dShape& s) {
#ifdef LABKIT_WITH_CUDA
    if (on.is_cuda()) {
        check_launch("deform_conv2d_col2im",
                     deform_conv2d_col2im_cuda(dtype, grad_input, grad_columns, offset, mask, s, current_stream()));
        return;
    }
#endif
    deform_conv2d_col2im_cpu(dtype, grad_input, grad_columns, offset, mask, s);
}

static void coord_grad(const at::Tensor& on, DType dtype, void* grad_offset, void* grad_mask, const void* grad_columns,
                       const void* input, const void* offset, const void* mask, const DeformConv2dShape& s) {
#ifdef LABKIT_WITH_CUDA
    if (on.is_cuda()) {
        check_launch("deform_conv2d_coord_grad",
                     deform_conv2d_coord_grad_cuda(dtype, grad_offset, grad_mask, grad_columns, input, offset, mask, s,
                                                   current_stream()));
        return;
    }
#endif
    deform_conv2d_coord_grad_cpu(dtype, grad_offset, grad_mask, grad_columns, input, offset, mask, s);
}

// labkit::matmul (kernels/matmul), called through the dispatcher: op.py's USES has the loader load it before this
// op. Looked up once (a hash-map search); a lookup that throws leaves the static unset, so a later call asks again.
static at::Tensor kit_matmul(const at::Tensor& a, const at::Tensor& b) {
    using Signature = at::Tensor(const at::Tensor&, const at::Tensor&);
    static const auto op = [] {
        const auto handle = c10::Dispatcher::singleton().findSchema({"labkit::matmul", ""});
        TORCH_CHECK(handle.has_value() && handle->hasKernelForDispatchKey(c10::DispatchKey::CUDA),
                    "deform_conv2d: on the GPU in float16 and bfloat16 the matmuls are labkit::matmul's, which is not "
                    "loaded: use ops.deform_conv2d (its op.py's USES loads ops.matmul first), or call ops.matmul once");
        return handle->typed<Signature>();
    }();
    return op.call(a, b);
}

// G matrix products at once: a (G, M, K) @ b (G, K, N) -> (G, M, N). On the GPU in 16 bits the kit's tensor-core
// matmul (lesson 07), one group at a time; elsewhere ATen's batched matmul: BLAS on the CPU, cuBLAS in float32
// and float64 on the GPU, where the kit has no tensor-core kernel (its float32 matmul runs at 0.84x cuBLAS on the
// H200, 2026-12-01, and would carry that into the layer; TF32 would round the inputs, which torchvision's float32
// does not).
static at::Tensor group_matmul(const at::Tensor& a, const at::Tensor& b) {
    const bool tensor_cores = a.is_cuda() && (a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16);
    if (!tensor_cores) return a.bmm(b);
    if (a.size(0) == 1) return kit_matmul(a[0], b[0]).unsqueeze(0);
    std::vector<at::Tensor> products;
    for (int64_t g = 0; g < a.size(0); g++) products.push_back(kit_matmul(a[g], b[g]));
    return at::stack(products);
}

static at::Tensor deform_conv2d_impl(const at::Tensor& input, const at::Tensor& offset, const at::Tensor& weight,
                                     const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                                     int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                     int64_t dilation_h, int64_t dilation_w) {
    const DeformConv2dShape s = check_inputs("deform_conv2d", input, offset, weight, bias, mask, stride_h, stride_w,
                                             pad_h, pad_w, dilation_h, dilation_w);
    const DType dtype = kit_dtype("deform_conv2d", "input", input);
    at::Tensor out = at::empty({s.batch, s.out_channels, s.out_height, s.out_width}, input.options());
    if (out.numel() == 0) return out;

    const at::ScalarType cols = column_type(input);
    const int64_t G = s.weight_groups, K = s.in_channels / G * s.kernel_h * s.kernel_w, L = s.out_height * s.out_width;
    const at::Tensor in = input.contiguous(), off = offset.contiguous();
    const at::Tensor msk = s.has_mask ? mask->contiguous() : at::Tensor();
    const at::Tensor w = weight.to(cols).contiguous().view({G, s.out_channels / G, K});
    const at::Tensor b = defined(bias) ? bias->to(sum_type(input)).reshape({1, s.out_channels, 1}) : at::Tensor();
    const int64_t chunk = chunk_images(s, cols);
    const at::Tensor buffer = at::empty({G * K * chunk * L}, input.options().dtype(cols));
    for (int64_t b0 = 0; b0 < s.batch; b0 += chunk) {
        const int64_t n = std::min(chunk, s.batch - b0);
        at::Tensor columns = buffer.narrow(0, 0, G * K * n * L).view({G, K, n * L});
        im2col(input, dtype, columns.data_ptr(), images(in, b0, n), images(off, b0, n), images(msk, b0, n), part(s, n));
        at::Tensor product = group_matmul(w, columns).view({s.out_channels, n, L}).permute({1, 0, 2});  // (n, C_out, L)
        if (b.defined()) product = product.add(b);  // torchvision's order: the matmul, then the bias
        out.narrow(0, b0, n).view({n, s.out_channels, L}).copy_(product);  // 16-bit: rounded here
    }
    return out;
}

using Gradients = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

static Gradients deform_conv2d_backward_impl(const at::Tensor& grad_out, const at::Tensor& input,
                                             const at::Tensor& offset, const at::Tensor& weight,
                                             const std::optional<at::Tensor>& mask, int64_t stride_h, int64_t stride_w,
                                             int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w) {
    const DeformConv2dShape s = check_inputs("deform_conv2d_backward", input, offset, weight, std::nullopt, mask,
                                             stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
    check_grad_out(grad_out, input, s);
    const DType dtype = kit_dtype("deform_conv2d_backward", "input", input);
    const at::ScalarType cols = column_type(input), acc = sum_type(input);
    const at::TensorOptions sums = input.options().dtype(acc);
    const int64_t G = s.weight_groups, K = s.in_channels / G * s.kernel_h * s.kernel_w, L = s.out_height * s.out_width;
    const int64_t out_per_group = s.out_channels / G;

    // grad_offset and grad_mask are written whole by the kernel; the other two are sums, started at zero
    at::Tensor grad_input = at::zeros({s.batch, s.in_channels, s.height, s.width}, sums);
    at::Tensor grad_offset = at::empty(offset.sizes(), input.options());
    at::Tensor grad_mask = s.has_mask ? at::empty(mask->sizes(), input.options()) : at::empty({0}, input.options());
    at::Tensor grad_weight = at::zeros({G, out_per_group, K}, sums);
    const at::Tensor grad_bias = at::sum(grad_out, {0, 2, 3}, false, acc).to(input.scalar_type());

    if (s.batch > 0) {
        const at::Tensor in = input.contiguous(), off = offset.contiguous();
        const at::Tensor msk = s.has_mask ? mask->contiguous() : at::Tensor();
        const at::Tensor go_all = grad_out.to(cols).contiguous();
        const at::Tensor w_t = weight.to(cols).contiguous().view({G, out_per_group, K}).transpose(1, 2);
        const int64_t chunk = chunk_images(s, cols);
        const at::Tensor buffer = at::empty({G * K * chunk * L}, input.options().dtype(cols));
        for (int64_t b0 = 0; b0 < s.batch; b0 += chunk) {
            const int64_t n = std::min(chunk, s.batch - b0);
            const DeformConv2dShape p = part(s, n);
            // grad_out's chunk as G matrices (C_out / G, n * L): output channel-major, the columns' order
            const at::Tensor go = go_all.narrow(0, b0, n)
                                      .view({n, s.out_channels, L})
                                      .permute({1, 0, 2})
                                      .reshape({G, out_per_group, n * L});
            at::Tensor columns = buffer.narrow(0, 0, G * K * n * L).view({G, K, n * L});
            // the gradient of the columns: into the buffer on the CPU (the columns come after them there), a tensor
            // of its own from the GPU's matmul
            const at::Tensor grad_columns = input.is_cuda() ? group_matmul(w_t, go).contiguous()
                                                            : at::bmm_out(columns, w_t, go);
            coord_grad(input, dtype, images(grad_offset, b0, n), s.has_mask ? images(grad_mask, b0, n) : nullptr,
                       grad_columns.data_ptr(), images(in, b0, n), images(off, b0, n), images(msk, b0, n), p);
            col2im(input, dtype, images(grad_input, b0, n), grad_columns.data_ptr(), images(off, b0, n),
                   images(msk, b0, n), p);
            im2col(input, dtype, columns.data_ptr(), images(in, b0, n), images(off, b0, n), images(msk, b0, n),
                   p);  // the buffer now holds the columns themselves
            if (cols == acc) {
                grad_weight.baddbmm_(go, columns.transpose(1, 2));
            } else {  // 16-bit on the GPU: (columns @ go^T)^T, summed in float. grad_out @ columns^T would copy the
                // columns transposed first (the kit's matmul reads rows): 151 MB at the detector's shape
                grad_weight.add_(group_matmul(columns, go.transpose(1, 2)).transpose(1, 2));
            }
        }
    }
    // 16-bit: rounded once; float32 and float64: no copy
    return {grad_input.to(input.scalar_type()), grad_offset, grad_mask,
            grad_weight.view(weight.sizes()).to(input.scalar_type()), grad_bias};
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("deform_conv2d", &deform_conv2d_impl);
    m.impl("deform_conv2d_backward", &deform_conv2d_backward_impl);
}

#ifdef LABKIT_WITH_CUDA
// CUDA: the guard makes the input's GPU current; the kernels launch on its current stream.
static at::Tensor deform_conv2d_cuda_impl(const at::Tensor& input, const at::Tensor& offset, const at::Tensor& weight,
                                          const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                                          int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
    const c10::cuda::CUDAGuard guard(input.device());
    return deform_conv2d_impl(input, offset, weight, bias, mask, sh, sw, ph, pw, dh, dw);
}

static Gradients deform_conv2d_backward_cuda_impl(const at::Tensor& grad_out, const at::Tensor& input,
                                                  const at::Tensor& offset, const at::Tensor& weight,
                                                  const std::optional<at::Tensor>& mask, int64_t sh, int64_t sw,
                                                  int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
    const c10::cuda::CUDAGuard guard(input.device());
    return deform_conv2d_backward_impl(grad_out, input, offset, weight, mask, sh, sw, ph, pw, dh, dw);
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("deform_conv2d", &deform_conv2d_cuda_impl);
    m.impl("deform_conv2d_backward", &deform_conv2d_backward_cuda_impl);
}
#endif  // LABKIT_WITH_CUDA

// ----------------------------------------------------------------------------------------------
// Autograd, for every device. The forward is linear in each of input, weight, bias and mask (the others held
// fixed), but not in offset, which moves the samples: its gradient is the slope of the bilinear interpolation (coord_grad). All five gradients come
// from one call of deform_conv2d_backward, which shares the grad_columns matmul among them. A second derivative is
// not implemented: deform_conv2d_backward's own gradient would need the derivatives of the slopes (piecewise linear
// in the offsets); it is refused with a message when asked for, never returned silently wrong.

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

static at::Tensor deform_conv2d_op(const at::Tensor& input, const at::Tensor& offset, const at::Tensor& weight,
                                   const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                                   int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
    static const auto op =
        typed_op<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                            const std::optional<at::Tensor>&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t)>(
            "labkit::deform_conv2d");
    return op.call(input, offset, weight, bias, mask, sh, sw, ph, pw, dh, dw);
}

static Gradients deform_conv2d_backward_op(const at::Tensor& grad_out, const at::Tensor& input,
                                           const at::Tensor& offset, const at::Tensor& weight,
                                           const std::optional<at::Tensor>& mask, int64_t sh, int64_t sw, int64_t ph,
                                           int64_t pw, int64_t dh, int64_t dw) {
    static const auto op =
        typed_op<Gradients(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const std::optional<at::Tensor>&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t)>(
            "labkit::deform_conv2d_backward");
    return op.call(grad_out, input, offset, weight, mask, sh, sw, ph, pw, dh, dw);
}

struct DeformConv2dFunction : torch::autograd::Function<DeformConv2dFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& offset,
                              const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              const std::optional<at::Tensor>& mask, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                              int64_t dh, int64_t dw) {
        ctx->save_for_backward({input, offset, weight, defined(mask) ? *mask : at::Tensor()});
        ctx->saved_data["has_bias"] = defined(bias);
        ctx->saved_data["args"] = std::vector<int64_t>{sh, sw, ph, pw, dh, dw};
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return deform_conv2d_op(input, offset, weight, bias, mask, sh, sw, ph, pw, dh, dw);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const std::vector<int64_t> a = ctx->saved_data["args"].toIntVector();
        const bool has_mask = saved[3].defined();
        const auto [grad_input, grad_offset, grad_mask, grad_weight, grad_bias] = deform_conv2d_backward_op(
            grads[0], saved[0], saved[1], saved[2], has_mask ? std::optional<at::Tensor>(saved[3]) : std::nullopt, a[0],
            a[1], a[2], a[3], a[4], a[5]);
        variable_list out(11);  // one per argument of forward; none for the sizes
        out[0] = grad_input;
        out[1] = grad_offset;
        out[2] = grad_weight;
        if (ctx->saved_data["has_bias"].toBool()) out[3] = grad_bias;
        if (has_mask) out[4] = grad_mask;
        return out;
    }
};

struct DeformConv2dBackwardFunction : torch::autograd::Function<DeformConv2dBackwardFunction> {
    static variable_list forward(AutogradContext*, const at::Tensor& grad_out, const at::Tensor& input,
                                 const at::Tensor& offset, const at::Tensor& weight,
                                 const std::optional<at::Tensor>& mask, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                                 int64_t dh, int64_t dw) {
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        const auto [a, b, c, d, e] =
            deform_conv2d_backward_op(grad_out, input, offset, weight, mask, sh, sw, ph, pw, dh, dw);
        return {a, b, c, d, e};
    }
    static variable_list backward(AutogradContext*, variable_list) {
        TORCH_CHECK(false,
                    "deform_conv2d: a second derivative (the gradient of deform_conv2d_backward) is not implemented: "
                    "ops.deform_conv2d has first derivatives only");
    }
};

static at::Tensor deform_conv2d_autograd_impl(const at::Tensor& input, const at::Tensor& offset,
                                              const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                                              const std::optional<at::Tensor>& mask, int64_t sh, int64_t sw, int64_t ph,
                                              int64_t pw, int64_t dh, int64_t dw) {
    const bool optional_grad = at::GradMode::is_enabled() &&
                               ((defined(bias) && bias->requires_grad()) || (defined(mask) && mask->requires_grad()));
    if (wants_grad(input, offset, weight) || optional_grad)
        return DeformConv2dFunction::apply(input, offset, weight, bias, mask, sh, sw, ph, pw, dh, dw);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return deform_conv2d_op(input, offset, weight, bias, mask, sh, sw, ph, pw, dh, dw);
}

static Gradients deform_conv2d_backward_autograd_impl(const at::Tensor& grad_out, const at::Tensor& input,
                                                      const at::Tensor& offset, const at::Tensor& weight,
                                                      const std::optional<at::Tensor>& mask, int64_t sh, int64_t sw,
                                                      int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
    const bool mask_grad = at::GradMode::is_enabled() && defined(mask) && mask->requires_grad();
    if (wants_grad(grad_out, input, offset, weight) || mask_grad) {
        const variable_list g =
            DeformConv2dBackwardFunction::apply(grad_out, input, offset, weight, mask, sh, sw, ph, pw, dh, dw);
        return {g[0], g[1], g[2], g[3], g[4]};
    }
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return deform_conv2d_backward_op(grad_out, input, offset, weight, mask, sh, sw, ph, pw, dh, dw);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) {
    m.impl("deform_conv2d", &deform_conv2d_autograd_impl);
    m.impl("deform_conv2d_backward", &deform_conv2d_backward_autograd_impl);
}
