// The GPU grids for exercise 4: one thread per element. Nothing to edit here.
#include "ex4_elu_backward.h"

template <typename T>
__global__ void ex4_elu_forward_kernel(T* y, const T* x, T alpha, int64_t n) {
    elu_forward_thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x, y, x, alpha, n);
}

template <typename T>
__global__ void ex4_elu_backward_kernel(T* grad_in, const T* grad_out, const T* x, T alpha, int64_t n) {
    elu_backward_thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x, grad_in, grad_out, x, alpha, n);
}

template <typename T>
static cudaError_t launch(bool backward, T* out, const T* in, const T* x, T alpha, int64_t n, cudaStream_t s) {
    const int64_t blocks = cdiv(n, kEx4Threads);
    if (backward) ex4_elu_backward_kernel<T><<<blocks, kEx4Threads, 0, s>>>(out, in, x, alpha, n);
    else ex4_elu_forward_kernel<T><<<blocks, kEx4Threads, 0, s>>>(out, x, alpha, n);
    return cudaGetLastError();
}

cudaError_t ex4_elu_cuda(bool backward, bool f64, void* out, const void* in, const void* x, double alpha, int64_t n,
                         cudaStream_t stream) {
    if (f64) return launch(backward, (double*)out, (const double*)in, (const double*)x, alpha, n, stream);
    return launch(backward, (float*)out, (const float*)in, (const float*)x, float(alpha), n, stream);
}
