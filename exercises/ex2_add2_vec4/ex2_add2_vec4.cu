// The GPU grid for exercise 2: one thread per pack of 4 floats. Nothing to edit here.
#include "ex2_add2_vec4.h"

__global__ void ex2_add2_vec4_kernel(float* c, const float* a, const float* b, int64_t n) {
    add2_vec4_thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x, c, a, b, n);
}

cudaError_t ex2_add2_vec4_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream) {
    ex2_add2_vec4_kernel<<<cdiv(cdiv(n, 4), kEx2Threads), kEx2Threads, 0, stream>>>(c, a, b, n);
    return cudaGetLastError();
}
