// elu.cpp: the binding of elu: checks the tensors, picks the device path, calls the torch-free launchers
// in elu_cpu.cpp / elu.cu, and registers them as the kernels of the operators labkit::elu,
// labkit::elu_backward, labkit::elu_seed and labkit::elu_seed_smem (schemas in op.py).
//
// How a call finds its kernel: the dispatcher looks at the tensors' device (the dispatch key, CPU or
// CUDA) and runs the function registered for that key below. The dtype is ours to map: kit_dtype
// turns torch's float32/float64/float16/bfloat16 into the torch-free DType the kernels switch on, and
// refuses anything else with the argument's name.
#include "binding.h"
#include <ATen/ops/le.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/where.h>

#include "autograd.h"
#include "elu.h"

// The checks shared by every path; messages name the argument.
static DType check_backward_inputs(const at::Tensor& grad_out, const at::Tensor& x) {
    check_same_device("elu_backward", "grad_out", grad_out, "x", x);
    check_same_dtype("elu_backward", "grad_out", grad_out, "x", x);
    check_same_shape("elu_backward", "grad_out", grad_out, "x", x);
    return kit_dtype("elu_backward", "x", x);
}

// The ELU tutorial's kernels: CUDA, float32, alpha 1 (its #define) and `int numel`.
static void check_seed_input(const char* op, const at::Tensor& x) {
    TORCH_CHECK_TYPE(kit_dtype(op, "x", x) == DType::f32, op, ": the tutorial's kernel takes float32 only, but x is ",
                     x.scalar_type());
    TORCH_CHECK_VALUE(x.numel() <= INT32_MAX, op,
                      ": the tutorial's kernel indexes with `int numel`, so it takes at "
                      "most 2^31 - 1 elements, but x has ",
                      x.numel());
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
    TORCH_CHECK(false, "elu(version=\"seed\") is the ELU tutorial's CUDA kernel and has no CPU version; x is on ",
                x.device(), ". Use a CUDA tensor, or the default version.");
}

static at::Tensor elu_seed_smem_cpu_impl(const at::Tensor& x) {
    TORCH_CHECK(false,
                "elu(version=\"seed_smem\") is the ELU tutorial's CUDA kernel and has no CPU version; x is "
                "on ",
                x.device(), ". Use a CUDA tensor, or the default version.");
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("elu", &elu_cpu_impl);
    m.impl("elu_backward", &elu_backward_cpu_impl);
    m.impl("elu_seed", &elu_seed_cpu_impl);
    m.impl("elu_seed_smem", &elu_seed_smem_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// Autograd, for every device. elu's gradient is elu_backward, which reads the input x, not the output y,
// as F.elu's autograd does: from y the factor alpha e^x would be y + alpha, which in 16-bit types is
// rounded and differs from F.elu's gradient. elu_backward is differentiable too (second derivatives:
// gradgradcheck, Hessians), so both ops have an autograd::Function. Each calls the ops through the
// dispatcher: forward below autograd (to reach the CPU/CUDA kernel), backward above it (so autograd
// records what backward does when a second derivative is wanted).

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

static at::Tensor elu_op(const at::Tensor& x, double alpha) {
    static const auto op = typed_op<at::Tensor(const at::Tensor&, double)>("labkit::elu");
    return op.call(x, alpha);
}

static at::Tensor elu_backward_op(const at::Tensor& grad_out, const at::Tensor& x, double alpha) {
    static const auto op = typed_op<at::Tensor(const at::Tensor&, const at::Tensor&, double)>("labkit::elu_backward");
    return op.call(grad_out, x, alpha);
}

struct EluFunction : torch::autograd::Function<EluFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double alpha) {
        ctx->save_for_backward({x});
        ctx->saved_data["alpha"] = alpha;
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return elu_op(x, alpha);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const at::Tensor x = ctx->get_saved_variables()[0];
        return {elu_backward_op(grads[0], x, ctx->saved_data["alpha"].toDouble()), at::Tensor()};
    }
};

struct EluBackwardFunction : torch::autograd::Function<EluBackwardFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grad_out, const at::Tensor& x, double alpha) {
        ctx->save_for_backward({grad_out, x});
        ctx->saved_data["alpha"] = alpha;
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return elu_backward_op(grad_out, x, alpha);
    }
    // grad_in = grad_out * d(x), with d(x) = alpha e^x for x <= 0 and 1 above. Linear in grad_out, so along
    // grad_out the gradient is elu_backward(gg, x); along x, d/dx (grad_out alpha e^x) = grad_out alpha e^x for
    // x <= 0 (elu_backward(grad_out, x) there) and 0 above.
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const at::Tensor &grad_out = saved[0], &x = saved[1], &gg = grads[0];
        const double alpha = ctx->saved_data["alpha"].toDouble();
        const at::Tensor d_grad_out = elu_backward_op(gg, x, alpha);
        const at::Tensor d_x = at::mul(gg, at::where(at::le(x, 0), elu_backward_op(grad_out, x, alpha), 0));
        return {d_grad_out, d_x, at::Tensor()};
    }
};

static at::Tensor elu_autograd_impl(const at::Tensor& x, double alpha) {
    if (wants_grad(x)) return EluFunction::apply(x, alpha);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return elu_op(x, alpha);
}

static at::Tensor elu_backward_autograd_impl(const at::Tensor& grad_out, const at::Tensor& x, double alpha) {
    if (wants_grad(grad_out, x)) return EluBackwardFunction::apply(grad_out, x, alpha);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return elu_backward_op(grad_out, x, alpha);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) {
    m.impl("elu", &elu_autograd_impl);
    m.impl("elu_backward", &elu_backward_autograd_impl);
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
    check_launch("elu_kernel",
                 elu_seed_cuda(y.data_ptr<float>(), xc.data_ptr<float>(), int(y.numel()), current_stream()));
    return y;
}

static at::Tensor elu_seed_smem_cuda_impl(const at::Tensor& x) {
    check_seed_input("elu(version=\"seed_smem\")", x);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor y = at::empty(x.sizes(), x.options());
    if (y.numel() == 0) return y;
    const at::Tensor xc = x.contiguous();
    check_launch("elu_smem_kernel",
                 elu_seed_smem_cuda(y.data_ptr<float>(), xc.data_ptr<float>(), int(y.numel()), current_stream()));
    return y;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("elu", &elu_cuda_impl);
    m.impl("elu_backward", &elu_backward_cuda_impl);
    m.impl("elu_seed", &elu_seed_cuda_impl);
    m.impl("elu_seed_smem", &elu_seed_smem_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
