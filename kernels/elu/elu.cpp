// elu.cpp: the binding of elu: checks the tensors, picks the device path, calls the torch-free launchers
// in elu_cpu.cpp / elu.cu, and registers them as the kernels of the operators labkit::elu,
// labkit::elu_backward, labkit::elu_seed and labkit::elu_seed_smem (schemas in op.py).
//
// How a call finds its kernel: the dispatcher looks at the tensors' device (the dispatch key, CPU or
// CUDA) and runs the function registered for that key below. The dtype is ours to map: kit_dtype
// turns torch's float32/float64/float16/bfloat16 into the torch-free DType the kernels switch on, and
// refuses anything else with the argument's name.
#include "binding.h"
#include "elu.h"

// The checks shared by every path; messages name the argument.
static DType check_backward_inputs(const at::Tensor& grad_out, const at::Tensor& x) {
    check_same_device("elu_backward", "grad_out", grad_out, "x", x);
    check_same_dtype("elu_backward", "grad_out", grad_out, "x", x);
    check_same_shape("elu_backward", "grad_out", grad_out, "x", x);
    return kit_dtype("elu_backward", "x", x);
}

// The seed's kernels: CUDA, float32, alpha 1 (its #define) and `int numel`.
static void check_seed_input(const char* op, const at::Tensor& x) {
    TORCH_CHECK_TYPE(kit_dtype(op, "x", x) == DType::f32, op, ": the seed kernel takes float32 only, but x is ",
                     x.scalar_type());
    TORCH_CHECK_VALUE(x.numel() <= INT32_MAX, op, ": the seed kernel indexes with `int numel`, so it takes at "
                      "most 2^31 - 1 elements, but x has ", x.numel());
}

// ----------------------------------------------------------------------------------------------
// CPU. A non-contiguous input (a transposed or sliced view) is copied to a contiguous one first: the
// kernels walk raw memory in order. The output is always a new contiguous tensor.

static at::Tensor elu_cpu_impl(const at::Tensor& x, double alpha) {
    const DType dtype = kit_dtype("elu", "x", x);
    const at::Tensor xc = x.contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options());
    elu_cpu(dtype, y.data_ptr(), xc.data_ptr(), alpha, y.numel());
    return y;
}

static at::Tensor elu_backward_cpu_impl(const at::Tensor& grad_out, const at::Tensor& x, double alpha) {
    const DType dtype = check_backward_inputs(grad_out, x);
    const at::Tensor gc = grad_out.contiguous(), xc = x.contiguous();
    at::Tensor grad_in = at::empty(x.sizes(), x.options());
    elu_backward_cpu(dtype, grad_in.data_ptr(), gc.data_ptr(), xc.data_ptr(), alpha, grad_in.numel());
    return grad_in;
}

static at::Tensor elu_seed_cpu_impl(const at::Tensor& x) {
    TORCH_CHECK(false, "elu(version=\"seed\") is the seed tutorial's CUDA kernel and has no CPU version; x is on ",
                x.device(), ". Use a CUDA tensor, or the default version.");
}

static at::Tensor elu_seed_smem_cpu_impl(const at::Tensor& x) {
    TORCH_CHECK(false, "elu(version=\"seed_smem\") is the seed tutorial's CUDA kernel and has no CPU version; x is "
                "on ", x.device(), ". Use a CUDA tensor, or the default version.");
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("elu", &elu_cpu_impl);
    m.impl("elu_backward", &elu_backward_cpu_impl);
    m.impl("elu_seed", &elu_seed_cpu_impl);
    m.impl("elu_seed_smem", &elu_seed_smem_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// CUDA: every entry point makes the input's GPU current (the guard) before it allocates or launches,
// then launches on that GPU's current stream. A grid of 0 blocks is an invalid launch: empty tensors
// return before it.
#ifdef LABKIT_WITH_CUDA

static at::Tensor elu_cuda_impl(const at::Tensor& x, double alpha) {
    const DType dtype = kit_dtype("elu", "x", x);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor y = at::empty(x.sizes(), x.options());
    if (y.numel() == 0) return y;
    const at::Tensor xc = x.contiguous();
    check_launch("elu_vec_kernel", elu_cuda(dtype, y.data_ptr(), xc.data_ptr(), alpha, y.numel(), current_stream()));
    return y;
}

static at::Tensor elu_backward_cuda_impl(const at::Tensor& grad_out, const at::Tensor& x, double alpha) {
    const DType dtype = check_backward_inputs(grad_out, x);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor grad_in = at::empty(x.sizes(), x.options());
    if (grad_in.numel() == 0) return grad_in;
    const at::Tensor gc = grad_out.contiguous(), xc = x.contiguous();
    check_launch("elu_backward_vec_kernel", elu_backward_cuda(dtype, grad_in.data_ptr(), gc.data_ptr(), xc.data_ptr(),
                                                              alpha, grad_in.numel(), current_stream()));
    return grad_in;
}

static at::Tensor elu_seed_cuda_impl(const at::Tensor& x) {
    check_seed_input("elu(version=\"seed\")", x);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor y = at::empty(x.sizes(), x.options());
    if (y.numel() == 0) return y;
    const at::Tensor xc = x.contiguous();
    check_launch("elu_kernel", elu_seed_cuda(y.data_ptr<float>(), xc.data_ptr<float>(), int(y.numel()),
                                             current_stream()));
    return y;
}

static at::Tensor elu_seed_smem_cuda_impl(const at::Tensor& x) {
    check_seed_input("elu(version=\"seed_smem\")", x);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor y = at::empty(x.sizes(), x.options());
    if (y.numel() == 0) return y;
    const at::Tensor xc = x.contiguous();
    check_launch("elu_smem_kernel", elu_seed_smem_cuda(y.data_ptr<float>(), xc.data_ptr<float>(), int(y.numel()),
                                                       current_stream()));
    return y;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("elu", &elu_cuda_impl);
    m.impl("elu_backward", &elu_backward_cuda_impl);
    m.impl("elu_seed", &elu_seed_cuda_impl);
    m.impl("elu_seed_smem", &elu_seed_smem_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
