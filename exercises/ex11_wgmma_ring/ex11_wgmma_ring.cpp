// Binding of exercise 11: C = A @ B through the ring, with what went wrong in it. On the CPU the model of the ring
// (float32); on a Hopper GPU the lesson's version 9 kernel (bfloat16). Checks, device guard, current stream. Nothing
// to edit here.
#include "binding.h"
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include "ex11_wgmma_ring_given.h"

// a (M x K) and b (K x N), one dtype and device: what both halves share.
static void check_args(const char* op, const at::Tensor& a, const at::Tensor& b) {
    kit_dtype(op, "a", a);
    kit_dtype(op, "b", b);
    check_same_device(op, "a", a, "b", b);
    check_same_dtype(op, "a", a, "b", b);
    check_matmul_shapes(op, a, b);
}

// (c, status): status = [what happened (Ex11Status), the step, the slot].
static std::tuple<at::Tensor, at::Tensor> ex11_cpu_impl(const at::Tensor& a, const at::Tensor& b, int64_t stages,
                                                       int64_t order) {
    const char* op = "ex11_wgmma_ring";
    check_args(op, a, b);
    TORCH_CHECK_TYPE(a.scalar_type() == at::kFloat, op, ": the CPU model takes float32, but a is ", a.scalar_type());
    TORCH_CHECK_VALUE(stages >= 1 && stages <= 64, op, ": stages must be 1 to 64, got ", stages);
    TORCH_CHECK_VALUE(order == 0 || order == 1, op, ": order must be 0 (producer first) or 1 (consumer first), got ",
                      order);
    at::Tensor c = at::zeros({a.size(0), b.size(1)}, a.options());
    at::Tensor status = at::full({3}, -1, a.options().dtype(at::kLong));
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    int64_t* s = status.data_ptr<int64_t>();
    s[0] = ex11_wgmma_ring_cpu(c.data_ptr<float>(), ac.data_ptr<float>(), bc.data_ptr<float>(), a.size(0), b.size(1),
                               a.size(1), int(stages), int(order), &s[1], &s[2]);
    return {c, status};
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("ex11_wgmma_ring", &ex11_cpu_impl); }

#ifdef LABKIT_WITH_CUDA
// status = [1 if a wait gave up (a deadlock), else 0, -1, -1]: the GPU says no more than that.
static std::tuple<at::Tensor, at::Tensor> ex11_cuda_impl(const at::Tensor& a, const at::Tensor& b, int64_t,
                                                        int64_t) {
    const char* op = "ex11_wgmma_ring";
    check_args(op, a, b);
    const c10::cuda::CUDAGuard guard(a.device());
    TORCH_CHECK_TYPE(a.scalar_type() == at::kBFloat16, op, ": on the GPU it runs the lesson's wgmma kernel, which "
                     "takes bfloat16 here, but a is ", a.scalar_type());
    TORCH_CHECK(ex11_wgmma_ring_available(a.get_device()), op, ": the GPU half needs a Hopper GPU (compute capability "
                "9.0) and the exercise built for sm_90a (TORCH_CUDA_ARCH_LIST=9.0a); ", a.device(), " cannot run it");
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    TORCH_CHECK_VALUE(K % 8 == 0 && N % 8 == 0, op, ": K and N must be multiples of 8 (TMA's rows), got K = ", K,
                      ", N = ", N);
    at::Tensor c = at::zeros({M, N}, a.options());
    at::Tensor stuck = at::zeros({1}, a.options().dtype(at::kInt));
    if (M > 0 && N > 0 && K > 0) {
        const at::Tensor ac = a.contiguous(), bc = b.contiguous();
        TORCH_CHECK(reinterpret_cast<uintptr_t>(ac.data_ptr()) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(bc.data_ptr()) % 16 == 0,
                    op, ": a and b must start at 16-byte-aligned addresses (TMA's rule)");
        check_launch("ex11's wgmma kernel", ex11_wgmma_ring_cuda(c.data_ptr(), ac.data_ptr(), bc.data_ptr(), M, N, K,
                                                                 stuck.data_ptr<int>(), a.get_device(),
                                                                 current_stream()));
    }
    return {c, at::cat({stuck.to(at::kLong), at::full({2}, -1, stuck.options().dtype(at::kLong))})};
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex11_wgmma_ring", &ex11_cuda_impl); }
#endif
