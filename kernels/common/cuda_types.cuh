// cuda_types.cuh: the four dtypes on the GPU, computed the way PyTorch computes them.
//
// Like cpu_half.h for the CPU: ld() widens an element to what we compute in (float for the 16-bit
// types, double for double), st() rounds once when storing. Pack16 is 16 bytes of elements: the
// widest load one thread can issue (LDG.128), so a vectorised kernel moves 4 floats, 2 doubles or
// 8 halves per load instruction. per_device() keeps what a launcher asks of the GPU (SM count, occupancy).
//
// The two 16-bit floats are the kit's own: Float16 and BFloat16 hold the bits, and ld() / st() convert them with
// one instruction each, the ones that CUDA's __half2float / __float2half_rn and __bfloat162float /
// __float2bfloat16_rn compile to, so the results are CUDA's to the bit. Why not CUDA's __half and
// __nv_bfloat16: their headers, cuda_fp16.h and cuda_bf16.h, are ~4,500 lines that nvcc reads five times over (two
// preprocessors, cudafe++, cicc, the host compiler), and a student waits for them at every edit of a kernel file:
// add2.cu took 0.97 s to compile with them and 0.76 s without (nvcc 13.0, the loader's flags, a 2-core machine,
// 2026-12-04, means of 10), while a kernel that only loads, computes in float and stores needs none of their
// operators. The kernels compile to the same SASS either way (add2, elu, sum, nms: identical; roi_align's forward
// kernels are unrolled differently). A file that needs CUDA's types (matmul's tensor-core instructions) includes
// cuda_half_types.cuh, which adds ld() / st() for them.
#pragma once
#include "kit.h"

struct alignas(2) Float16 { uint16_t bits; };
struct alignas(2) BFloat16 { uint16_t bits; };

__device__ __forceinline__ float ld(float x) { return x; }
__device__ __forceinline__ double ld(double x) { return x; }
__device__ __forceinline__ float ld(Float16 x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
}
__device__ __forceinline__ float ld(BFloat16 x) {  // the 16 bits on top of a float's: cvt.f32.bf16 from sm_90
    float f;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    asm("cvt.f32.bf16 %0, %1;" : "=f"(f) : "h"(x.bits));
#else
    asm("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(x.bits));
#endif
    return f;
}

__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(double* p, double v) { *p = v; }
__device__ __forceinline__ void st(Float16* p, float v) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(p->bits) : "f"(v)); }
// Rounded to nearest, ties to even; NaN stays NaN (0x7fff, as cvt gives it). cvt.rn.bf16.f32 came with sm_80; older
// GPUs get the same rounding in integer arithmetic, as cuda_bf16.h does for them.
__device__ __forceinline__ void st(BFloat16* p, float v) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(p->bits) : "f"(v));
#else
    const uint32_t u = __float_as_uint(v);
    p->bits = (u & 0x7fffffffu) > 0x7f800000u ? uint16_t(0x7fff) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}

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
        case DType::f16: return f((Float16*)nullptr);
        case DType::bf16: return f((BFloat16*)nullptr);
        case DType::f32:
        default: return f((float*)nullptr);
    }
}
