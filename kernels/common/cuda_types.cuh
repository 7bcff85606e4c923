// cuda_types.cuh: the four dtypes on the GPU, computed the way PyTorch computes them.
//
// Like cpu_half.h for the CPU: ld() widens an element to what we compute in (float for the 16-bit
// types, double for double), st() rounds once when storing. Pack16 is 16 bytes of elements: the
// widest load one thread can issue (LDG.128), so a vectorised kernel moves 4 floats, 2 doubles or
// 8 halves per load instruction. per_device() keeps what a launcher asks of the GPU (SM count, occupancy).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kit.h"

__device__ __forceinline__ float ld(float x) { return x; }
__device__ __forceinline__ double ld(double x) { return x; }
__device__ __forceinline__ float ld(__half x) { return __half2float(x); }
__device__ __forceinline__ float ld(__nv_bfloat16 x) { return __bfloat162float(x); }

__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(double* p, double v) { *p = v; }
__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
struct alignas(16) Pack16 {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

// A 16-byte load needs a 16-byte-aligned address. Fresh tensors are (the allocator aligns to 512 B),
// but a view such as x[1:] is contiguous and starts 4 bytes in, so every launcher checks.
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A number a launcher asks of CUDA, asked once per device and kept: a query costs about as much as a launch.
// ask() returns it (never 0, which marks "not asked yet"); a device number past the table is asked every time.
template <typename Ask>
inline int per_device(int device, Ask ask) {
    static int known[64] = {};  // one table per caller: each lambda is a type of its own
    if (device < 0 || device >= 64) return ask();
    if (known[device] == 0) known[device] = ask();
    return known[device];
}

// What a query for per_device gave: v where it returned cudaSuccess and v >= 1, else `fallback`, with the failed
// query's error cleared: else the launcher's cudaGetLastError() after its launch would report it as the launch's.
inline int query_result(cudaError_t e, int v, int fallback) {
    if (e == cudaSuccess && v >= 1) return v;
    cudaGetLastError();
    return fallback;
}

// A device attribute for per_device, or `fallback` where the query fails.
inline int device_attribute(cudaDeviceAttr attr, int device, int fallback) {
    int v = 0;
    const cudaError_t e = cudaDeviceGetAttribute(&v, attr, device);
    return query_result(e, v, fallback);
}

// Call f with a typed null pointer for `dtype`, so one launcher body covers every dtype.
template <typename F>
inline auto dispatch_dtype(DType dtype, F&& f) {
    switch (dtype) {
        case DType::f64: return f((double*)nullptr);
        case DType::f16: return f((__half*)nullptr);
        case DType::bf16: return f((__nv_bfloat16*)nullptr);
        case DType::f32:
        default: return f((float*)nullptr);
    }
}
