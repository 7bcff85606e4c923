// add2.cpp: the binding of add2: checks the tensors, picks the device path, calls the torch-free
// launchers in add2_cpu.cpp / add2.cu, and registers them as the kernels of the operator labkit::add2.
//
// The schemas (what the op is called, what it takes and returns) are defined once per process in
// op.py, not here: a .so that defines a schema can be loaded only once, while one that only holds
// implementations (TORCH_LIBRARY_IMPL) can be rebuilt and re-loaded after every edit.
#include "binding.h"
#include "add2.h"
#include "autograd.h"

// Shape, dtype and device checks shared by every path; messages name the argument.
static DType check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b) {
    check_same_device(op, "a", a, "b", b);
    check_same_dtype(op, "a", a, "b", b);
    check_same_shape(op, "a", a, "b", b);
    return kit_dtype(op, "a", a);
}

// ----------------------------------------------------------------------------------------------
// CPU

static void add2_into_cpu(at::Tensor& c, const at::Tensor& a, const at::Tensor& b, DType dtype) {
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    add2_cpu(dtype, c.data_ptr(), ac.data_ptr(), bc.data_ptr(), c.numel());
}

static at::Tensor add2_cpu_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("add2", a, b);
    at::Tensor c = at::empty(a.sizes(), a.options());
    add2_into_cpu(c, a, b, dtype);
    return c;
}

static void add2_out_cpu_impl(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    const DType dtype = check_inputs("add2", a, b);
    check_out("add2", out, a, {a, b});
    add2_into_cpu(out, a, b, dtype);
}

static at::Tensor add2_seed_cpu_impl(const at::Tensor& a, const at::Tensor&) {
    TORCH_CHECK(false,
                "add2(version=\"seed\") is the add2 tutorial's CUDA kernel and has no CPU version; "
                "a is on ",
                a.device(), ". Use a CUDA tensor, or the default version.");
}

static at::Tensor add2_gpu_only_cpu_impl(const at::Tensor& a, const at::Tensor&) {
    TORCH_CHECK(false,
                "add2(version=\"unguarded\"/\"set_device\") are lessons about choosing a GPU and have no CPU "
                "version; a is on ",
                a.device());
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("add2", &add2_cpu_impl);
    m.impl("add2_out", &add2_out_cpu_impl);
    m.impl("add2_seed", &add2_seed_cpu_impl);
    m.impl("add2_unguarded", &add2_gpu_only_cpu_impl);
    m.impl("add2_set_device", &add2_gpu_only_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// Autograd, for every device: d(a + b)/da = d(a + b)/db = 1, so both gradients are the incoming one.
//
// The dispatcher runs this kernel first whenever an input may need a gradient (the Autograd key sits
// above CPU and CUDA); forward() drops below it and calls the op again, which then finds the device
// kernel above. In C++, not in op.py: a Python gradient puts the interpreter in every call's path.

static at::Tensor add2_below_autograd(const at::Tensor& a, const at::Tensor& b) {
    static const auto op = typed_op<at::Tensor(const at::Tensor&, const at::Tensor&)>("labkit::add2");
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op.call(a, b);
}

struct Add2Function : torch::autograd::Function<Add2Function> {
    static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& a, const at::Tensor& b) {
        return add2_below_autograd(a, b);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                   torch::autograd::variable_list grads) {
        return {grads[0], grads[0]};
    }
};

static at::Tensor add2_autograd_impl(const at::Tensor& a, const at::Tensor& b) {
    return wants_grad(a, b) ? Add2Function::apply(a, b) : add2_below_autograd(a, b);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) { m.impl("add2", &add2_autograd_impl); }

// ----------------------------------------------------------------------------------------------
// CUDA: every entry point makes the inputs' GPU current (the guard), then launches on its current
// stream. Without the guard the kernel runs on whichever GPU happens to be current (the bug of the blog post notebook 03 starts from).
#ifdef LABKIT_WITH_CUDA

static void add2_into_cuda(at::Tensor& c, const at::Tensor& a, const at::Tensor& b, DType dtype) {
    if (c.numel() == 0) return;  // a grid of 0 blocks is an invalid launch
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    check_launch("add2_vec_kernel",
                 add2_cuda(dtype, c.data_ptr(), ac.data_ptr(), bc.data_ptr(), c.numel(), current_stream()));
}

static at::Tensor add2_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("add2", a, b);
    const c10::cuda::CUDAGuard guard(a.device());
    at::Tensor c = at::empty(a.sizes(), a.options());
    add2_into_cuda(c, a, b, dtype);
    return c;
}

static void add2_out_cuda_impl(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    const DType dtype = check_inputs("add2", a, b);
    check_out("add2", out, a, {a, b});
    const c10::cuda::CUDAGuard guard(a.device());
    add2_into_cuda(out, a, b, dtype);
}

static at::Tensor add2_seed_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("add2(version=\"seed\")", a, b);
    TORCH_CHECK_TYPE(dtype == DType::f32, "add2(version=\"seed\"): the tutorial's kernel takes float32 only, but a is ",
                     a.scalar_type());
    TORCH_CHECK_VALUE(a.numel() <= INT32_MAX,
                      "add2(version=\"seed\"): the tutorial's kernel indexes with `int n`, so "
                      "it takes at most 2^31 - 1 elements, but a has ",
                      a.numel());
    const c10::cuda::CUDAGuard guard(a.device());
    at::Tensor c = at::empty(a.sizes(), a.options());
    if (c.numel() == 0) return c;
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    check_launch("add2_kernel", add2_seed_cuda(c.data_ptr<float>(), ac.data_ptr<float>(), bc.data_ptr<float>(),
                                               int(c.numel()), current_stream()));
    return c;
}

// THE BLOG POST'S BUG, kept for the multi-GPU lesson: no device guard. The output is allocated on a's GPU (the
// tensor options say where), but the kernel goes to the *current* GPU's stream, so it runs on the current GPU
// with pointers into another GPU's memory: an illegal address, or, once peer access is on, a silent and
// unordered remote access. Never copy this function; add2_cuda_impl above is the pattern.
static at::Tensor add2_unguarded_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("add2(version=\"unguarded\")", a, b);
    at::Tensor c = at::empty(a.sizes(), a.options());
    if (c.numel() == 0) return c;
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    check_launch("add2_vec_kernel (unguarded)",
                 add2_cuda(dtype, c.data_ptr(), ac.data_ptr(), bc.data_ptr(), c.numel(), current_stream()));
    return c;
}

// The blog post's fix: cudaSetDevice in the launcher. Right GPU, default stream, and the caller's current GPU changed.
static at::Tensor add2_set_device_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    const DType dtype = check_inputs("add2(version=\"set_device\")", a, b);
    at::Tensor c = at::empty(a.sizes(), a.options());
    if (c.numel() == 0) return c;
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    check_launch("add2_vec_kernel (cudaSetDevice)",
                 add2_set_device_cuda(a.get_device(), dtype, c.data_ptr(), ac.data_ptr(), bc.data_ptr(), c.numel()));
    return c;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("add2", &add2_cuda_impl);
    m.impl("add2_out", &add2_out_cuda_impl);
    m.impl("add2_seed", &add2_seed_cuda_impl);
    m.impl("add2_unguarded", &add2_unguarded_cuda_impl);
    m.impl("add2_set_device", &add2_set_device_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
