// debug_lab.cpp: the binding of the debugging lesson's kernels: checks, device guard, current stream, launch
// checks, exactly as for a real op. The kernels are wrong on purpose; the binding is not, so that the lesson
// shows what the checks catch (a bad launch, a wrong dtype) and what only a memory checker can (a bad index).
//
// The schemas are defined once per process in op.py, not here (see add2.cpp for why).
#include "binding.h"
#include "debug_lab.h"

// The lesson kernels take float32 only: one dtype keeps them short.
static void check_float32(const char* op, const char* arg, const at::Tensor& t) {
    TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat, op, ": ", arg,
                     " must be float32 (the lesson kernels are "
                     "written for float only), but got ",
                     t.scalar_type());
}

// printf's buffer on the GPU holds about 1 MB; a line per element of a big tensor would overflow it silently.
static void check_printf_input(const at::Tensor& x) {
    check_float32("debug_printf", "x", x);
    TORCH_CHECK_VALUE(x.numel() <= 1024,
                      "debug_printf: prints one line per element, so x may have at most 1024 "
                      "elements, but has ",
                      x.numel(), "; print a slice");
}

// y is written through its raw pointer, so it must be one contiguous block; count is the (wrong) bound.
static void check_oob_write_input(const at::Tensor& y, int64_t count) {
    check_float32("debug_oob_write", "y", y);
    TORCH_CHECK_VALUE(y.is_contiguous(),
                      "debug_oob_write: y must be contiguous (it is written through a raw "
                      "pointer)");
    TORCH_CHECK_VALUE(count >= 0, "debug_oob_write: count must be >= 0, but got ", count);
}

static void check_block_reverse_input(const at::Tensor& x) {
    check_float32("debug_block_reverse", "x", x);
    TORCH_CHECK_VALUE(x.numel() % kTile == 0, "debug_block_reverse: reverses whole blocks of ", kTile,
                      " elements, so x.numel() must be a multiple of ", kTile, ", but is ", x.numel());
}

// ----------------------------------------------------------------------------------------------
// CPU

static void printf_cpu_impl(const at::Tensor& x) {
    check_printf_input(x);
    const at::Tensor xc = x.contiguous();
    printf_cpu(xc.data_ptr<float>(), xc.numel());
}

static void oob_write_cpu_impl(at::Tensor& y, int64_t count) {
    check_oob_write_input(y, count);
    oob_write_cpu(y.data_ptr<float>(), count);
}

static at::Tensor block_reverse_cpu_impl(const at::Tensor& x, bool race) {
    check_block_reverse_input(x);
    TORCH_CHECK(!race,
                "debug_block_reverse(race=True) runs smem_race_kernel, a GPU lesson: a race needs threads "
                "that run at once and share memory, and the CPU path runs one loop; x is on ",
                x.device());
    const at::Tensor xc = x.contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options());
    block_reverse_cpu(y.data_ptr<float>(), xc.data_ptr<float>(), xc.numel());
    return y;
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("debug_printf", &printf_cpu_impl);
    m.impl("debug_oob_write", &oob_write_cpu_impl);
    m.impl("debug_block_reverse", &block_reverse_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// CUDA: each entry point makes the input's GPU current (the guard) and launches on its current stream.
#ifdef LABKIT_WITH_CUDA

static void printf_cuda_impl(const at::Tensor& x) {
    check_printf_input(x);
    const c10::cuda::CUDAGuard guard(x.device());
    if (x.numel() == 0) return;  // a grid of 0 blocks is an invalid launch
    const at::Tensor xc = x.contiguous();
    check_launch("printf_kernel", printf_cuda(xc.data_ptr<float>(), xc.numel(), current_stream()));
}

static void oob_write_cuda_impl(at::Tensor& y, int64_t count) {
    check_oob_write_input(y, count);
    const c10::cuda::CUDAGuard guard(y.device());
    if (count == 0) return;
    // With CUDA_LAUNCH_BLOCKING=1 the launch waits for the kernel, so a bad access is reported here, by this
    // check, naming the kernel; without it the launch returns at once and the error comes at a later call.
    check_launch("oob_write_kernel", oob_write_cuda(y.data_ptr<float>(), count, current_stream()));
}

static at::Tensor block_reverse_cuda_impl(const at::Tensor& x, bool race) {
    check_block_reverse_input(x);
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor y = at::empty(x.sizes(), x.options());
    if (y.numel() == 0) return y;
    const at::Tensor xc = x.contiguous();
    check_launch(race ? "smem_race_kernel" : "smem_reverse_kernel",
                 block_reverse_cuda(y.data_ptr<float>(), xc.data_ptr<float>(), xc.numel(), race, current_stream()));
    return y;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("debug_printf", &printf_cuda_impl);
    m.impl("debug_oob_write", &oob_write_cuda_impl);
    m.impl("debug_block_reverse", &block_reverse_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
