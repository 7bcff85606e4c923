// Binding of exercise 14 (float32, float64): checks, device guard, current stream. Nothing to edit here.
#include "binding.h"
#include "ex14_deform_sample_given.h"

static Ex14Shape check_args(const at::Tensor& input, const at::Tensor& offset, const at::Tensor& mask, int64_t kernel_h,
                            int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                            int64_t dilation_h, int64_t dilation_w) {
    const char* op = "ex14_deform_sample";
    TORCH_CHECK_TYPE(input.scalar_type() == at::kFloat || input.scalar_type() == at::kDouble, op,
                     ": input must be float32 or float64, but got ", input.scalar_type());
    check_same_device(op, "input", input, "offset", offset);
    check_same_device(op, "input", input, "mask", mask);
    check_same_dtype(op, "input", input, "offset", offset);
    check_same_dtype(op, "input", input, "mask", mask);
    TORCH_CHECK_VALUE(input.dim() == 4, op, ": input must be 4-D (N, C, H, W), but has shape ", input.sizes());
    TORCH_CHECK_VALUE(kernel_h > 0 && kernel_w > 0 && stride_h > 0 && stride_w > 0 && dilation_h > 0 &&
                          dilation_w > 0 && pad_h >= 0 && pad_w >= 0,
                      op, ": the kernel's size, stride and dilation must be positive and its padding not negative");
    const int64_t H = input.size(2), W = input.size(3), kk = kernel_h * kernel_w;
    const int64_t out_h = (H + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
    const int64_t out_w = (W + 2 * pad_w - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
    TORCH_CHECK_VALUE(out_h > 0 && out_w > 0, op, ": the kernel does not fit the padded input (", H, " x ", W, ")");
    TORCH_CHECK_VALUE(offset.dim() == 4 && offset.size(0) == input.size(0) && offset.size(1) > 0 &&
                          offset.size(1) % (2 * kk) == 0 && offset.size(2) == out_h && offset.size(3) == out_w,
                      op, ": offset must have shape (N, offset_groups * 2 * ", kk, ", ", out_h, ", ", out_w,
                      "), but has shape ", offset.sizes());
    const int64_t groups = offset.size(1) / (2 * kk);
    TORCH_CHECK_VALUE(input.size(1) % groups == 0, op, ": the ", input.size(1), " channels do not split into ", groups,
                      " offset groups");
    TORCH_CHECK_VALUE(mask.dim() == 4 && mask.size(0) == input.size(0) && mask.size(1) == groups * kk &&
                          mask.size(2) == out_h && mask.size(3) == out_w,
                      op, ": mask must have shape (", input.size(0), ", ", groups * kk, ", ", out_h, ", ", out_w,
                      "), but has shape ", mask.sizes());
    return Ex14Shape{input.size(0), input.size(1), H,          W,          kernel_h, kernel_w, stride_h, stride_w,
                     pad_h,         pad_w,         dilation_h, dilation_w, out_h,    out_w,    groups};
}

static at::Tensor run(const at::Tensor& input, const at::Tensor& offset, const at::Tensor& mask, int64_t kernel_h,
                      int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                      int64_t dilation_h, int64_t dilation_w) {
    const Ex14Shape s =
        check_args(input, offset, mask, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
    const bool f64 = input.scalar_type() == at::kDouble;
    at::Tensor columns =
        at::empty({s.channels * kernel_h * kernel_w, s.batch * s.out_height * s.out_width}, input.options());
    if (columns.numel() == 0) return columns;
    const at::Tensor in = input.contiguous(), off = offset.contiguous(), m = mask.contiguous();
#ifdef LABKIT_WITH_CUDA
    if (input.is_cuda()) {
        const c10::cuda::CUDAGuard guard(input.device());
        check_launch("ex14_im2col_kernel", ex14_deform_sample_cuda(f64, columns.data_ptr(), in.data_ptr(),
                                                                   off.data_ptr(), m.data_ptr(), s, current_stream()));
        return columns;
    }
#endif
    ex14_deform_sample_cpu(f64, columns.data_ptr(), in.data_ptr(), off.data_ptr(), m.data_ptr(), s);
    return columns;
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("ex14_deform_sample", &run); }
#ifdef LABKIT_WITH_CUDA
TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex14_deform_sample", &run); }
#endif
