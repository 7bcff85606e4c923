// Exercise 8 (the reductions lesson): the sum of each row, by blocks that work together.
//
// Row r of x (rows x cols) gets `blocks` blocks of 256 threads (several when the row is long). Two parts:
//  (a) slice_sum_thread: one thread's grid-stride loop. Thread t of block b of its row adds the elements
//      b * 256 + t, then one grid (blocks * 256) further each time, while they are inside the row.
//  (b) block_finish: the block's 256 sums become one. Each warp adds its 32 (warp_sum, as in exercise 7) and
//      writes that into its slot of shared memory; warp 0 adds the 8 slots and adds the block's total into the
//      row's result with atomic_add (several blocks add into each row). Warp 0 must not read a slot before its
//      warp wrote it: between the writes and the reads, every warp of the block waits at block_sync().
//
// block_finish is warp code (cpu_warp.h): `Lanes` is one value per lane; plain values (float, int) are the same
// in every lane; atomic_add adds once per warp. On the GPU block_sync() is __syncthreads(); the CPU runs a
// block's 8 warps as 8 threads with a real barrier, and runs warp 0 first until it reaches the barrier, so a
// missing barrier fails every time. Grade it with `from kit.grade import check; check("ex8_block_sum")`.
#pragma once
#include <cstdint>

#include "cpu_warp.h"

constexpr int kEx8Threads = 256;
constexpr int kEx8Warps = kEx8Threads / kWarpSize;

// Blocks per row: one per 1024 elements (4 per thread), at most 8 (then each thread loops further).
inline int ex8_blocks_per_row(int64_t cols) { return int(cols <= 1024 ? 1 : cols >= 8 * 1024 ? 8 : cdiv(cols, 1024)); }

#ifdef __CUDA_ARCH__
__device__ inline void block_sync() { __syncthreads(); }
#else
void block_sync();  // the CPU's barrier (ex8_block_sum_cpu.cpp)
#endif

// Given (exercise 7's answer): the sum of v's 32 lanes, in lane 0.
KIT_HD inline Lanes warp_sum(Lanes v) {
    for (int offset = 16; offset > 0; offset /= 2) v += shfl_down(v, offset);
    return v;
}

// (a) The sum of thread t's elements of row xr (cols elements); this block is number `block` of `blocks`.
// TODO (roughly 3 lines): a grid-stride loop; every element of the row is added by exactly one thread.
KIT_HD inline float slice_sum_thread(int t, int block, int blocks, const float* xr, int64_t cols) {
    float acc = 0.0f;
    for (int64_t i = int64_t(block) * kEx8Threads + t; i < cols; i += int64_t(blocks) * kEx8Threads) acc += xr[i];
    return acc;
}

// (b) The block's total into out[row], once per block. v: each lane's slice sum; warp: this warp (0 .. 7);
// warp_sums: 8 floats of shared memory, one per warp.
// TODO (roughly 7 lines): lane0(warp_sum(v)) into warp_sums[warp]; block_sync(); warp 0 adds the 8 slots
// and atomic_add()s the total into out[row].
KIT_HD inline void block_finish(Lanes v, int warp, float* warp_sums, float* out, int64_t row) {
    warp_sums[warp] = lane0(warp_sum(v));
    block_sync();  // every warp's slot written before warp 0 reads them
    if (warp == 0) {
        float total = 0.0f;
        for (int w = 0; w < kEx8Warps; w++) total += warp_sums[w];
        atomic_add(&out[row], total);
    }
}

void ex8_block_sum_cpu(float* out, const float* x, int64_t rows, int64_t cols);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex8_block_sum_cuda(float* out, const float* x, int64_t rows, int64_t cols, bool stagger, cudaStream_t stream);
#endif
