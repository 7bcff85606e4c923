// Binding of exercise 10 (float32, C = A @ B into out): checks, device guard, current stream. Nothing to edit here.
#include <limits>

#include "binding.h"
#include "ex10_matmul_reg_launch.h"

static void check_args(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
    const char* op = "ex10_matmul_reg";
    check_same_device(op, "a", a, "b", b);
    check_same_device(op, "out", out, "a", a);
    TORCH_CHECK_TYPE(a.scalar_type() == at::kFloat, op, ": a must be float32, but got ", a.scalar_type());
    TORCH_CHECK_TYPE(b.scalar_type() == at::kFloat, op, ": b must be float32, but got ", b.scalar_type());
    TORCH_CHECK_TYPE(out.scalar_type() == at::kFloat, op, ": out must be float32, but got ", out.scalar_type());
    TORCH_CHECK_VALUE(a.dim() == 2 && b.dim() == 2, op, ": a and b must be 2-D matrices, but a has shape ",
                      a.sizes(), " and b has shape ", b.sizes());
    TORCH_CHECK_VALUE(a.size(1) == b.size(0), op, ": a's columns must match b's rows (a is M x K, b is K x N), "
                      "but a has shape ", a.sizes(), " and b has shape ", b.sizes());
    TORCH_CHECK_VALUE(out.dim() == 2 && out.size(0) == a.size(0) && out.size(1) == b.size(1), op,
                      ": out must have shape [M, N] = [", a.size(0), ", ", b.size(1), "], but has shape ",
                      out.sizes());
    TORCH_CHECK_VALUE(out.is_contiguous(), op, ": out must be contiguous (it is written through a raw pointer)");
    for (const at::Tensor* in : {&a, &b}) {
        const at::MemOverlapStatus s = at::get_overlap_status(out, *in);
        TORCH_CHECK_VALUE(s != at::MemOverlapStatus::Partial && s != at::MemOverlapStatus::Full, op,
                          ": out overlaps ", in == &a ? "a" : "b", ", which the kernel still reads");
    }
    TORCH_CHECK_VALUE(cdiv(a.size(0), kEx10BM) <= 65535, op, ": a has too many rows for one grid (", a.size(0),
                      "; at most ", 65535 * kEx10BM, ")");
    TORCH_CHECK_VALUE(cdiv(b.size(1), kEx10BN) <= std::numeric_limits<int32_t>::max(), op,
                      ": b has too many columns for one grid (", b.size(1), ")");
}

static void ex10_cpu_impl(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    check_args(a, b, out);
    if (out.numel() == 0) return;
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    ex10_matmul_reg_cpu(out.data_ptr<float>(), ac.data_ptr<float>(), bc.data_ptr<float>(), a.size(0), b.size(1),
                        a.size(1));
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("ex10_matmul_reg", &ex10_cpu_impl); }

#ifdef LABKIT_WITH_CUDA
static void ex10_cuda_impl(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    check_args(a, b, out);
    const c10::cuda::CUDAGuard guard(a.device());
    if (out.numel() == 0) return;
    const at::Tensor ac = a.contiguous(), bc = b.contiguous();
    check_launch("ex10_matmul_reg_kernel",
                 ex10_matmul_reg_cuda(out.data_ptr<float>(), ac.data_ptr<float>(), bc.data_ptr<float>(), a.size(0),
                                      b.size(1), a.size(1), current_stream()));
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex10_matmul_reg", &ex10_cuda_impl); }
#endif
