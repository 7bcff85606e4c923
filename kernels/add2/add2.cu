// add2.cu: c = a + b, elementwise, on the GPU.
//
// The "hello world" of custom ops, and a lesson in memory bandwidth: each element costs 12 bytes of
// DRAM traffic (read a and b, write c, float32) and one add, so the GPU waits on memory, never on
// arithmetic. At 2^28 floats that is 3.2 GB; an H200 moves ~4.3 TB/s, so ~0.75 ms is the floor.
// A kernel is good when it gets near a plain copy's bandwidth; nothing else matters here.
//
// Versions, simplest first (ops.add2(a, b) runs 3, ops.add2(a, b, version="seed") runs 1):
//   1. add2_kernel         the kernel of the Chinese add2 tutorial notebook 01 starts from, as written
//                          there: 1024-thread blocks, a grid-stride loop, float only, `int n`. ~68% of
//                          torch.add's bandwidth.
//   2. add2_scalar_kernel  one element per thread, int64_t indices, every dtype. What add2 falls back
//                          to when a pointer is not 16-byte aligned (a view like x[1:]).
//   3. add2_vec_kernel     16 bytes per load (a float4), the tail done by the first threads.
//                          What ops.add2 runs: at torch.add's bandwidth.
// Why 3 beats 1: the same bytes move in a quarter of the load/store instructions, and each memory
// request is a full 128-byte line per 8 threads. (`int n` also breaks past 2^31 elements: 8 GiB.)
#include "add2.h"
#include "cuda_types.cuh"

// ----------------------------------------------------------------------------------------------
// GPU kernels

// 1. The tutorial's kernel, unchanged.
__global__ void add2_kernel(float* c, const float* a, const float* b, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}

// 2. One element per thread: the grid covers n, so no loop is needed.
template <typename T>
__global__ void add2_scalar_kernel(T* c, const T* a, const T* b, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) st(&c[i], ld(a[i]) + ld(b[i]));
}

// 3. One 16-byte pack per thread; the n % N elements past the last full pack go to block 0.
template <typename T>
__global__ void add2_vec_kernel(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b, int64_t n) {
    constexpr int N = Pack16<T>::N;
    const int64_t n_packs = n / N;
    const int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (p < n_packs) {
        const Pack16<T> x = reinterpret_cast<const Pack16<T>*>(a)[p];
        const Pack16<T> y = reinterpret_cast<const Pack16<T>*>(b)[p];
        Pack16<T> z;
#pragma unroll
        for (int k = 0; k < N; k++) st(&z.v[k], ld(x.v[k]) + ld(y.v[k]));
        reinterpret_cast<Pack16<T>*>(c)[p] = z;
    }
    const int64_t tail = n - n_packs * N;
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const int64_t i = n_packs * N + threadIdx.x;
        st(&c[i], ld(a[i]) + ld(b[i]));
    }
}

// ----------------------------------------------------------------------------------------------
// Launchers: grid sizes come from n, never from one GPU's SM count; every launch is checked.

cudaError_t add2_seed_cuda(float* c, const float* a, const float* b, int n, cudaStream_t stream) {
    dim3 grid((n + 1023) / 1024);
    dim3 block(1024);
    add2_kernel<<<grid, block, 0, stream>>>(c, a, b, n);  // the tutorial used the default stream
    return cudaGetLastError();                            // and never checked the launch
}

cudaError_t add2_set_device_cuda(int device, DType dtype, void* c, const void* a, const void* b, int64_t n) {
    const cudaError_t err = cudaSetDevice(device);  // process-wide: still set after we return
    if (err != cudaSuccess) return err;
    return add2_cuda(dtype, c, a, b, n, /*stream=*/0);
}

cudaError_t add2_cuda(DType dtype, void* c, const void* a, const void* b, int64_t n, cudaStream_t stream) {
    constexpr int threads = 256;  // 8 warps: enough blocks per SM to hide latency, small tail waste
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        T* c_ = static_cast<T*>(c);
        const T* a_ = static_cast<const T*>(a);
        const T* b_ = static_cast<const T*>(b);
        if (aligned16(a) && aligned16(b) && aligned16(c)) {
            const int64_t blocks = cdiv(n / Pack16<T>::N, threads);
            add2_vec_kernel<T><<<(blocks > 0 ? blocks : 1), threads, 0, stream>>>(c_, a_, b_, n);
        } else {
            add2_scalar_kernel<T><<<cdiv(n, threads), threads, 0, stream>>>(c_, a_, b_, n);
        }
        return cudaGetLastError();
    });
}
