// What exercise 8 gives: the block's shape, how many blocks a row gets, the barrier, exercise 7's warp_sum and the
// launchers (the binding includes this alone, so an edit of ex8_block_sum.h recompiles the kernel files, not the
// binding). Nothing to edit here.
#pragma once
#include <cstdint>

#include "cpu_warp.h"  // Lanes, shfl_down, lane0, atomic_add: the same on the GPU and the CPU

constexpr int kEx8Threads = 256;
constexpr int kEx8Warps = kEx8Threads / kWarpSize;

// Blocks per row: one per 1024 elements (4 per thread), at most 8 (then each thread loops further).
inline int ex8_blocks_per_row(int64_t cols) { return int(cols <= 1024 ? 1 : cols >= 8 * 1024 ? 8 : cdiv(cols, 1024)); }

#ifdef __CUDA_ARCH__
__device__ inline void block_sync() { __syncthreads(); }
#else
void block_sync();  // the CPU's barrier (ex8_block_sum_cpu.cpp)
#endif

// Exercise 7's answer: the sum of v's 32 lanes, in lane 0.
KIT_HD inline Lanes warp_sum(Lanes v) {
    for (int offset = 16; offset > 0; offset /= 2) v += shfl_down(v, offset);
    return v;
}

void ex8_block_sum_cpu(float* out, const float* x, int64_t rows, int64_t cols);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex8_block_sum_cuda(float* out, const float* x, int64_t rows, int64_t cols, bool stagger, cudaStream_t stream);
#endif
