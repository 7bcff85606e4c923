// The GPU grid for exercise 1: one thread per element, the thread's work in ex1_add2_tail.h. Nothing to edit here.
#include "ex1_add2_tail.h"

__global__ void ex1_add2_tail_kernel(float* c, const float* a, const float* b, int64_t n) {
    add2_tail_thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x, c, a, b, n);
}

cudaError_t ex1_add2_tail_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream) {
    ex1_add2_tail_kernel<<<cdiv(n, kEx1Threads), kEx1Threads, 0, stream>>>(c, a, b, n);
    return cudaGetLastError();
}
