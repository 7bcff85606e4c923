// The GPU grid for exercise 7: one thread per element, each warp sums its 32 with warp_sum (ex7_warp_sum.h)
// and lane 0 adds that into the result. Nothing to edit here.
#include "ex7_warp_sum.h"

__global__ void ex7_warp_sum_kernel(float* out, const float* x, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const Lanes v = i < n ? x[i] : 0.0f;  // every lane takes part in the shuffles: past the end it adds 0
    atomic_add(out, lane0(warp_sum(v)));
}

cudaError_t ex7_warp_sum_cuda(float* out, const float* x, int64_t n, cudaStream_t stream) {
    ex7_warp_sum_kernel<<<cdiv(n, kEx7Threads), kEx7Threads, 0, stream>>>(out, x, n);
    return cudaGetLastError();
}
