// elu.cu: y = elu(x) = x if x > 0, else alpha (e^x - 1), elementwise, on the GPU; and its gradient,
// dx = dy if x > 0, else dy alpha e^x.
//
// Why ELU: ReLU (max(x, 0)) has gradient 0 for every x < 0, so a unit whose inputs go negative stops
// learning ("dies"). ELU bends smoothly to -alpha instead: negative inputs still pass a gradient, and
// outputs average nearer 0. The price is an exponential per element, which is the whole story below.
//
// Versions, simplest first (ops.elu(x) runs 4; version="seed" runs 1, version="seed_smem" runs 2):
//   1. elu_kernel          the kernel of the Chinese ELU tutorial notebook 02 starts from, as written
//                          there: one float per thread, 256-thread blocks, `int numel`, expf(x) - 1. ~60% of F.elu's bandwidth (H200, 2^28).
//   2. elu_smem_kernel     the tutorial's "shared-memory optimisation": each thread stages its element in
//                          shared memory and back, with two barriers. Slower than 1: see the kernel.
//   3. elu_scalar_kernel   one element per thread, int64_t indices, every dtype, expm1. What ops.elu
//                          falls back to when a pointer is not 16-byte aligned (a view like x[1:]).
//   4. elu_vec_kernel      two 16-byte packs per thread, all loads issued before any math, the tail
//                          done by the first threads. What ops.elu runs.
// The backward has versions 3 and 4 too: elu_backward_scalar_kernel, elu_backward_vec_kernel.
//
// Napkin math (H200: a copy moves ~4.2 TB/s; the SMs issue ~3e13 instructions a second):
// - float32 at 2^28 elements: read 1 GiB, write 1 GiB: 2.1 GB / 4.2 TB/s = 0.51 ms. expm1f is ~30
//   instructions; 2^28 x ~40 / 3e13 = 0.36 ms. Memory is the limit, so the job is to keep it busy.
//   Version 1 asks for 4 bytes per thread; a full SM (2048 threads) then has 8 KB requested at a time,
//   but at ~4 TB/s and ~0.6 us per trip each SM needs ~20 KB in flight (Little's law). Version 4 asks
//   for 32 bytes per thread before doing any math: 64 KB per SM.
// - float16/bfloat16: half the bytes, 0.26 ms, but the same arithmetic per element: with expm1f that
//   is 0.36 ms, so the arithmetic is the limit (PyTorch's 16-bit ELU: ~2.6 TB/s against a 4.2 TB/s
//   copy). Version 4 uses expm1_short (elu.h) for them: 17 instructions, ~0.2 ms, memory-bound again.
// - float64: twice the bytes, 1 ms; H200's double units keep up with the ~20 double ops of expm1.
// No --use_fast_math (the tutorial built with it): it turns expf into __expf, whose error near 0, once 1 is
// subtracted, is thousands of ulps, and it flushes subnormals to 0. ELU must match F.elu.
#include <type_traits>

#include "cuda_types.cuh"
#include "elu.h"

// ----------------------------------------------------------------------------------------------
// Device helpers

// What an element of T is computed in: float for float and the 16-bit types, double for double.
template <typename T>
using compute_t = decltype(ld(T{}));

// elu of one element, with PyTorch's test: x > 0 ? x : alpha * expm1(x) (so NaN gives NaN). Both
// sides are computed, then one is selected: on random data each warp would take both sides of a
// branch anyway, and a select saves the branch's bookkeeping.
template <typename T>
__device__ __forceinline__ compute_t<T> elu_value(compute_t<T> x, compute_t<T> alpha) {
    compute_t<T> e;
    if constexpr (sizeof(T) == 2) {
        e = alpha * expm1_short(x);  // 16-bit: arithmetic is the limit; same 16-bit results as expm1f
    } else if constexpr (std::is_same_v<T, float>) {
        e = alpha * expm1f(x);  // what F.elu computes: bit-identical to it
    } else {
        e = alpha * expm1(x);
    }
    return x > 0 ? x : e;
}

// The gradient of one element, exactly as PyTorch's elu_backward computes it from the input:
// x <= 0 ? dy * alpha * e^x : dy, multiplied left to right (so NaN x passes dy through, as there).
template <typename T>
__device__ __forceinline__ compute_t<T> elu_grad_value(compute_t<T> dy, compute_t<T> x, compute_t<T> alpha) {
    compute_t<T> g;
    if constexpr (std::is_same_v<compute_t<T>, float>) {
        g = dy * alpha * expf(x);
    } else {
        g = dy * alpha * exp(x);
    }
    return x <= 0 ? g : dy;
}

// ----------------------------------------------------------------------------------------------
// GPU kernels

// 1. The tutorial's kernel, unchanged (alpha fixed at 1 by its #define).
#define ALPHA 1.0f

__device__ float elu_elementwise(float x) { return x > 0 ? x : ALPHA * (expf(x) - 1); }

__global__ void elu_kernel(const float* input, float* output, int numel) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < numel) {
        output[idx] = elu_elementwise(input[idx]);
    }
}

// 2. The tutorial's "shared-memory optimisation", as it was written there. Not compiled: it is wrong.
// __syncthreads() is a barrier for the whole block: every thread must reach it, or the behaviour
// is undefined (a hang, or a barrier that releases early). Here the threads past the end of the
// tensor (idx >= numel, in the last block whenever numel is not a multiple of 256) skip both
// barriers while the others wait at them.
#if 0
__global__ void elu_kernel_optimized(const float* input, float* output, int numel) {
    extern __shared__ float smem[];
    const int tid = threadIdx.x;
    const int idx = blockIdx.x * blockDim.x + tid;
    if (idx < numel) {
        smem[tid] = input[idx];
        __syncthreads();
        smem[tid] = elu_elementwise(smem[tid]);
        __syncthreads();
        output[idx] = smem[tid];
    }
}
#endif

// 2. What version="seed_smem" runs: the same work, with the barriers moved out of the branch so
// that every thread reaches them. Still no faster than version 1, and it cannot be: each element is
// read once and written once, so there is nothing to reuse from shared memory; the detour adds a
// shared store, a shared load and two block-wide waits per element. (The barriers guard nothing
// either: each thread only ever touches its own smem[tid].)
__global__ void elu_smem_kernel(const float* input, float* output, int numel) {
    extern __shared__ float smem[];
    const int tid = threadIdx.x;
    const int idx = blockIdx.x * blockDim.x + tid;
    const bool active = idx < numel;
    if (active) smem[tid] = input[idx];
    __syncthreads();
    if (active) smem[tid] = elu_elementwise(smem[tid]);
    __syncthreads();
    if (active) output[idx] = smem[tid];
}

// 3. One element per thread: the grid covers n, so no loop is needed.
template <typename T>
__global__ void elu_scalar_kernel(T* y, const T* x, compute_t<T> alpha, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) st(&y[i], elu_value<T>(ld(x[i]), alpha));
}

// 4. kPacks 16-byte packs per thread: pack k of thread t of block b is b * blockDim * kPacks +
// k * blockDim + t, so each load instruction of a warp reads 512 consecutive bytes. Every load is
// issued before any math, so the loads of one thread travel together. The n % N elements past the
// last full pack go to block 0.
constexpr int kPacks = 2;
constexpr int kBackwardPacks = 1;  // the backward's own: see kBackwardThreads

template <typename T>
__global__ void elu_vec_kernel(T* __restrict__ y, const T* __restrict__ x, compute_t<T> alpha, int64_t n) {
    constexpr int N = Pack16<T>::N;
    const int64_t n_packs = n / N;
    const int64_t first = int64_t(blockIdx.x) * blockDim.x * kPacks + threadIdx.x;
    Pack16<T> in[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; k++) {
        const int64_t p = first + int64_t(k) * blockDim.x;
        if (p < n_packs) in[k] = reinterpret_cast<const Pack16<T>*>(x)[p];
    }
#pragma unroll
    for (int k = 0; k < kPacks; k++) {
        const int64_t p = first + int64_t(k) * blockDim.x;
        if (p < n_packs) {
            Pack16<T> out;
#pragma unroll
            for (int j = 0; j < N; j++) st(&out.v[j], elu_value<T>(ld(in[k].v[j]), alpha));
            reinterpret_cast<Pack16<T>*>(y)[p] = out;
        }
    }
    const int64_t tail = n - n_packs * N;
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const int64_t i = n_packs * N + threadIdx.x;
        st(&y[i], elu_value<T>(ld(x[i]), alpha));
    }
}

// Backward 3: one element per thread.
template <typename T>
__global__ void elu_backward_scalar_kernel(T* dx, const T* dy, const T* x, compute_t<T> alpha, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) st(&dx[i], elu_grad_value<T>(ld(dy[i]), ld(x[i]), alpha));
}

// Backward 4: as elu_vec_kernel, with two inputs: kBackwardPacks packs of each requested before any math.
template <typename T>
__global__ void elu_backward_vec_kernel(T* __restrict__ dx, const T* __restrict__ dy, const T* __restrict__ x,
                                        compute_t<T> alpha, int64_t n) {
    constexpr int N = Pack16<T>::N;
    const int64_t n_packs = n / N;
    const int64_t first = int64_t(blockIdx.x) * blockDim.x * kBackwardPacks + threadIdx.x;
    Pack16<T> g[kBackwardPacks], in[kBackwardPacks];
#pragma unroll
    for (int k = 0; k < kBackwardPacks; k++) {
        const int64_t p = first + int64_t(k) * blockDim.x;
        if (p < n_packs) {
            g[k] = reinterpret_cast<const Pack16<T>*>(dy)[p];
            in[k] = reinterpret_cast<const Pack16<T>*>(x)[p];
        }
    }
#pragma unroll
    for (int k = 0; k < kBackwardPacks; k++) {
        const int64_t p = first + int64_t(k) * blockDim.x;
        if (p < n_packs) {
            Pack16<T> out;
#pragma unroll
            for (int j = 0; j < N; j++) st(&out.v[j], elu_grad_value<T>(ld(g[k].v[j]), ld(in[k].v[j]), alpha));
            reinterpret_cast<Pack16<T>*>(dx)[p] = out;
        }
    }
    const int64_t tail = n - n_packs * N;
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const int64_t i = n_packs * N + threadIdx.x;
        st(&dx[i], elu_grad_value<T>(ld(dy[i]), ld(x[i]), alpha));
    }
}

// ----------------------------------------------------------------------------------------------
// Launchers: grid sizes come from n, never from one GPU's SM count; every launch is checked.

constexpr int kThreads = 256;  // 8 warps: enough blocks per SM to hide latency, small tail waste
// The forward's vector kernel in blocks of 4 warps, two packs per thread: of the block sizes and packs per thread
// scripts/experiment_elu_variants.py tries, the fastest against F.elu on an H200 (results/*/elu-variants*.json).
// Smaller blocks finish and free their SM's slot sooner, which keeps more loads in flight in the last wave. The
// backward (two loads per element) does best with one pack per thread in blocks of 256: its two loads already keep
// 32 bytes per thread in flight.
constexpr int kForwardThreads = 128;
constexpr int kBackwardThreads = 256;

cudaError_t elu_seed_cuda(float* y, const float* x, int n, cudaStream_t stream) {
    elu_kernel<<<cdiv(n, kThreads), kThreads, 0, stream>>>(x, y, n);  // the tutorial used the default stream
    return cudaGetLastError();  // and never checked the launch
}

cudaError_t elu_seed_smem_cuda(float* y, const float* x, int n, cudaStream_t stream) {
    elu_smem_kernel<<<cdiv(n, kThreads), kThreads, kThreads * sizeof(float), stream>>>(x, y, n);
    return cudaGetLastError();
}

// Blocks for the vector kernels: one per threads * packs packs, and at least one for the tail.
template <typename T>
static int64_t vec_blocks(int64_t n, int threads, int packs) {
    const int64_t blocks = cdiv(n / Pack16<T>::N, int64_t(threads) * packs);
    return blocks > 0 ? blocks : 1;
}

cudaError_t elu_cuda(DType dtype, void* y, const void* x, double alpha, int64_t n, cudaStream_t stream) {
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        const compute_t<T> a = compute_t<T>(alpha);  // float(alpha) but for double, as PyTorch rounds it
        T* y_ = static_cast<T*>(y);
        const T* x_ = static_cast<const T*>(x);
        if (aligned16(x) && aligned16(y)) {
            elu_vec_kernel<T><<<vec_blocks<T>(n, kForwardThreads, kPacks), kForwardThreads, 0, stream>>>(y_, x_, a, n);
        } else {
            elu_scalar_kernel<T><<<cdiv(n, kThreads), kThreads, 0, stream>>>(y_, x_, a, n);
        }
        return cudaGetLastError();
    });
}

cudaError_t elu_backward_cuda(DType dtype, void* dx, const void* dy, const void* x, double alpha, int64_t n,
                              cudaStream_t stream) {
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        const compute_t<T> a = compute_t<T>(alpha);
        T* dx_ = static_cast<T*>(dx);
        const T* dy_ = static_cast<const T*>(dy);
        const T* x_ = static_cast<const T*>(x);
        if (aligned16(dx) && aligned16(dy) && aligned16(x)) {
            elu_backward_vec_kernel<T>
                <<<vec_blocks<T>(n, kBackwardThreads, kBackwardPacks), kBackwardThreads, 0, stream>>>(dx_, dy_, x_, a,
                                                                                                      n);
        } else {
            elu_backward_scalar_kernel<T><<<cdiv(n, kThreads), kThreads, 0, stream>>>(dx_, dy_, x_, a, n);
        }
        return cudaGetLastError();
    });
}
