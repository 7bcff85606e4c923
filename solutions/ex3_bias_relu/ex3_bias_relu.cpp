#include "binding.h"
#include "ex3_bias_relu.h"

static void check_args(const at::Tensor& x, const at::Tensor& bias) {
    check_same_device("ex3_bias_relu", "x", x, "bias", bias);
    check_same_dtype("ex3_bias_relu", "x", x, "bias", bias);
    TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat, "ex3_bias_relu: x must be float32, but got ", x.scalar_type());
    TORCH_CHECK_VALUE(x.dim() == 2, "ex3_bias_relu: x must be 2-D [rows, cols], but has shape ", x.sizes());
    TORCH_CHECK_VALUE(bias.dim() == 1 && bias.size(0) == x.size(1), "ex3_bias_relu: bias must have shape [", x.size(1),
                      "] (one per column of x), but has shape ", bias.sizes());
}

static at::Tensor bias_relu_cpu_impl(const at::Tensor& x, const at::Tensor& bias) {
    check_args(x, bias);
    const at::Tensor xc = x.contiguous(), bc = bias.contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options());
    bias_relu_cpu(y.data_ptr<float>(), xc.data_ptr<float>(), bc.data_ptr<float>(), x.size(0), x.size(1));
    return y;
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("ex3_bias_relu", &bias_relu_cpu_impl); }

#ifdef LABKIT_WITH_CUDA
static at::Tensor bias_relu_cuda_impl(const at::Tensor& x, const at::Tensor& bias) {
    check_args(x, bias);
    const c10::cuda::CUDAGuard guard(x.device());
    const at::Tensor xc = x.contiguous(), bc = bias.contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options());
    if (y.numel() == 0) return y;
    check_launch("bias_relu_kernel", bias_relu_cuda(y.data_ptr<float>(), xc.data_ptr<float>(), bc.data_ptr<float>(),
                                                    x.size(0), x.size(1), current_stream()));
    return y;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex3_bias_relu", &bias_relu_cuda_impl); }
#endif
