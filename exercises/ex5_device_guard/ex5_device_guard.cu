// The kernel of exercise 5: correct as it is. Nothing to edit here.
#include "ex5_device_guard_given.h"

__global__ void ex5_add2_kernel(float* c, const float* a, const float* b, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

cudaError_t ex5_add2_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream) {
    constexpr int threads = 256;
    ex5_add2_kernel<<<cdiv(n, threads), threads, 0, stream>>>(c, a, b, n);
    return cudaGetLastError();
}
