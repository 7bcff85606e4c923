// Exercise 9: C = A @ B with tiles in shared memory. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex9_matmul_tile_given.h"  // kEx9Tile (32), block_sync()

// One thread: (tx, ty) of block (bx, by); As, Bs: the block's two 32 x 32 tiles in shared memory.
// TODO (roughly 10 lines): row and col; acc = 0; for each k0: load As[ty][tx] and Bs[ty][tx] (0 past an edge),
// block_sync(), 32 multiply-adds from the tiles, block_sync(); then c[row * N + col] = acc if inside C.
KIT_HD inline void matmul_tile_thread(int tx, int ty, int64_t bx, int64_t by, float (*As)[kEx9Tile],
                                      float (*Bs)[kEx9Tile], float* c, const float* a, const float* b, int64_t M,
                                      int64_t N, int64_t K) {
}
