// Binding of exercise 8 (float32, rows x cols): checks, device guard, current stream. Nothing to edit here.
#include "binding.h"
#include <ATen/ops/zeros.h>

#include <limits>

#include "ex8_block_sum_given.h"

static at::Tensor check_args(const at::Tensor& x) {
    TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat, "ex8_block_sum: x must be float32, but got ", x.scalar_type());
    TORCH_CHECK_VALUE(x.dim() == 2, "ex8_block_sum: x must be 2-D (rows x cols), but has shape ", x.sizes());
    TORCH_CHECK_VALUE(x.size(0) * ex8_blocks_per_row(x.size(1)) <= std::numeric_limits<int32_t>::max(),
                      "ex8_block_sum: x has too many rows for one grid (", x.size(0), ")");
    return at::zeros({x.size(0)}, x.options());  // the blocks of each row add into it
}

static at::Tensor ex8_cpu_impl(const at::Tensor& x, bool) {
    at::Tensor out = check_args(x);
    const at::Tensor xc = x.contiguous();
    ex8_block_sum_cpu(out.data_ptr<float>(), xc.data_ptr<float>(), xc.size(0), xc.size(1));
    return out;
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("ex8_block_sum", &ex8_cpu_impl); }

#ifdef LABKIT_WITH_CUDA
static at::Tensor ex8_cuda_impl(const at::Tensor& x, bool stagger) {
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor out = check_args(x);
    if (x.numel() == 0) return out;
    const at::Tensor xc = x.contiguous();
    check_launch("ex8_block_sum_kernel", ex8_block_sum_cuda(out.data_ptr<float>(), xc.data_ptr<float>(), xc.size(0),
                                                            xc.size(1), stagger, current_stream()));
    return out;
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex8_block_sum", &ex8_cuda_impl); }
#endif
