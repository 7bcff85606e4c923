// Binding of exercise 12 (float32, float64): checks, device guard, current stream. Nothing to edit here.
#include "binding.h"
#include "ex12_bilinear_sample_given.h"

static Ex12Shape check_args(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale,
                            int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    const char* op = "ex12_bilinear_sample";
    TORCH_CHECK_TYPE(input.scalar_type() == at::kFloat || input.scalar_type() == at::kDouble, op,
                     ": input must be float32 or float64, but got ", input.scalar_type());
    check_same_device(op, "input", input, "boxes", boxes);
    check_same_dtype(op, "input", input, "boxes", boxes);
    TORCH_CHECK_VALUE(input.dim() == 4, op, ": input must be 4-D (N, C, H, W), but has shape ", input.sizes());
    TORCH_CHECK_VALUE(boxes.dim() == 2 && boxes.size(1) == 5, op,
                      ": boxes must have shape (K, 5), each row (batch index, x1, y1, x2, y2), but has shape ",
                      boxes.sizes());
    TORCH_CHECK_VALUE(pooled_height > 0 && pooled_width > 0, op, ": output_size must be positive, but is (",
                      pooled_height, ", ", pooled_width, ")");
    TORCH_CHECK_VALUE(sampling_ratio >= -1, op, ": sampling_ratio must be -1, 0 or positive, but is ",
                      sampling_ratio);
    return Ex12Shape{boxes.size(0),  input.size(0), input.size(1), input.size(2), input.size(3),
                     pooled_height, pooled_width,  sampling_ratio, spatial_scale, aligned};
}

static at::Tensor run(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale, int64_t pooled_height,
                      int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    const Ex12Shape s = check_args(input, boxes, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
    const bool f64 = input.scalar_type() == at::kDouble;
    at::Tensor out = at::empty({s.boxes, s.channels, pooled_height, pooled_width}, input.options());
    if (out.numel() == 0) return out;
    const at::Tensor in = input.contiguous(), bx = boxes.contiguous();
#ifdef LABKIT_WITH_CUDA
    if (input.is_cuda()) {
        const c10::cuda::CUDAGuard guard(input.device());
        check_launch("ex12_roi_align_kernel", ex12_bilinear_sample_cuda(f64, out.data_ptr(), in.data_ptr(),
                                                                        bx.data_ptr(), s, current_stream()));
        return out;
    }
#endif
    ex12_bilinear_sample_cpu(f64, out.data_ptr(), in.data_ptr(), bx.data_ptr(), s);
    return out;
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("ex12_bilinear_sample", &run); }
#ifdef LABKIT_WITH_CUDA
TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex12_bilinear_sample", &run); }
#endif
