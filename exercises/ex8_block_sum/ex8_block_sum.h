// Exercise 8: the sum of each row, by blocks that work together. The task and how it is graded: check.py, beside
// this file.
#pragma once
#include "ex8_block_sum_given.h"  // kEx8Threads, kEx8Warps, block_sync(), warp_sum

// (a) The sum of thread t's elements of row xr (cols elements); this block is number `block` of `blocks`.
// TODO (roughly 3 lines): a grid-stride loop; every element of the row is added by exactly one thread.
KIT_HD inline float slice_sum_thread(int t, int block, int blocks, const float* xr, int64_t cols) {
    return 0.0f;
}

// (b) The block's total into out[row], once per block. v: each lane's slice sum; warp: this warp (0 .. 7);
// warp_sums: 8 floats of shared memory, one per warp.
// TODO (roughly 7 lines): lane0(warp_sum(v)) into warp_sums[warp]; block_sync(); warp 0 adds the 8 slots
// and atomic_add()s the total into out[row].
KIT_HD inline void block_finish(Lanes v, int warp, float* warp_sums, float* out, int64_t row) {
}
