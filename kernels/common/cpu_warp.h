// cpu_warp.h: warp code written once for the GPU and the CPU (exercises 7 and 8).
//
// A `Lanes` is one value per lane of a warp. On the GPU every thread is one lane and holds its own lane's
// value; on the CPU one call runs the whole warp and a Lanes holds all 32 values. The operations mean the same
// on both:
//   a + b, a += b        lane by lane
//   shfl_down(v, k)      lane l gets lane l + k's value; a lane with l + k >= 32 keeps its own (__shfl_down_sync)
//   lane0(v)             lane 0's value, for the whole warp (every lane gets it: __shfl_sync from lane 0)
//   atomic_add(p, s)     *p += s once for the warp (on the GPU, lane 0's atomicAdd)
// Torch-free, like kit.h.
#pragma once
#include "kit.h"

constexpr int kWarpSize = 32;

#ifdef __CUDA_ARCH__
struct Lanes {
    float v;  // this thread's lane
    __device__ Lanes(float x = 0.0f) : v(x) {}
};
__device__ inline Lanes shfl_down(Lanes a, int offset) { return __shfl_down_sync(0xffffffffu, a.v, offset); }
__device__ inline float lane0(Lanes a) { return __shfl_sync(0xffffffffu, a.v, 0); }
__device__ inline void atomic_add(float* p, float s) {
    if (threadIdx.x % kWarpSize == 0) atomicAdd(p, s);
}
__device__ inline Lanes operator+(Lanes a, Lanes b) { return a.v + b.v; }

#else
struct Lanes {
    float lane[kWarpSize];
    Lanes(float x = 0.0f) {
        for (float& l : lane) l = x;
    }
};
inline Lanes shfl_down(Lanes a, int offset) {
    Lanes r = a;  // a lane with no lane `offset` up keeps its own value
    for (int l = 0; l + offset < kWarpSize; l++) r.lane[l] = a.lane[l + offset];
    return r;
}
inline float lane0(Lanes a) { return a.lane[0]; }
inline void atomic_add(float* p, float s) {  // atomic: the warps of a block run as threads (exercise 8)
    uint32_t seen = __atomic_load_n(reinterpret_cast<uint32_t*>(p), __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(reinterpret_cast<uint32_t*>(p), &seen, f32_bits(f32_from_bits(seen) + s), false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
inline Lanes operator+(Lanes a, Lanes b) {
    for (int l = 0; l < kWarpSize; l++) a.lane[l] += b.lane[l];
    return a;
}
#endif

KIT_HD inline Lanes& operator+=(Lanes& a, Lanes b) { return a = a + b; }
