// Exercise 7 (the reductions lesson): the sum of a warp's 32 values, by shuffles.
//
// A warp's 32 threads can read each other's registers: shfl_down(v, k) hands lane l the value of lane l + k
// (a lane with l + k >= 32 gets its own value back). Adding the value 16 lanes up halves what is left to add:
// after that step lanes 0..15 hold the sums of two values each; 8 lanes up, 4, 2, 1 more and lane 0 holds all 32.
// Five steps, no shared memory, no barrier.
//
// `Lanes` (cpu_warp.h) is one value per lane: on the GPU a thread's own float, on the CPU all 32 of the warp,
// with shfl_down meaning the same on both, so you can do this exercise on a laptop.
// Grade it with `from kit.grade import check; check("ex7_warp_sum")`.
#pragma once
#include <cstdint>

#include "cpu_warp.h"

constexpr int kEx7Threads = 256;  // 8 warps per block

// The sum of v over the warp's 32 lanes, in lane 0 (what the other lanes hold afterwards does not matter).
// TODO (roughly 2 lines): five steps, offsets 16, 8, 4, 2, 1, each adding shfl_down(v, offset) to v.
KIT_HD inline Lanes warp_sum(Lanes v) {
    return v;
}

void ex7_warp_sum_cpu(float* out, const float* x, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex7_warp_sum_cuda(float* out, const float* x, int64_t n, cudaStream_t stream);
#endif
