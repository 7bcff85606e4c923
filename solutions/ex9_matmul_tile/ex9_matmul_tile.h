// Exercise 9 (the matmul lesson): C = A @ B with tiles in shared memory, for any M, N, K (float32, row-major:
// A is M x K, B is K x N, C is M x N, C[i][j] = sum_k A[i][k] B[k][j]).
//
// The lesson's matmul_smem_kernel (kernels/matmul/matmul.cu), written by you: a block of 32 x 32 threads computes
// a 32 x 32 tile of C, one output per thread. Thread (tx, ty) of block (bx, by) owns C[row][col], row = by * 32 +
// ty, col = bx * 32 + tx. For each step k0 = 0, 32, 64, ... < K:
//   1. load: each thread writes ONE element of the A tile, As[ty][tx] = A[row][k0 + tx], and one of the B tile,
//      Bs[ty][tx] = B[k0 + ty][col]; 0 where that element is past an edge (row >= M, k0 + tx >= K, ...). tx runs
//      along a row of A and of B, so a warp (32 threads of one ty) reads 32 consecutive floats: coalesced.
//   2. block_sync(): no thread reads the tiles before every thread of the block wrote its element;
//   3. accumulate: acc += As[ty][k] * Bs[k][tx] for k = 0 .. 31;
//   4. block_sync(): no thread overwrites the tiles with the next step's elements while a slower one still reads.
// Then, if (row, col) is inside C, C[row][col] = acc. Every thread reaches every block_sync(): a thread past the
// edge loads zeros instead of returning early (its elements of the tiles are someone else's inputs).
//
// On the GPU block_sync() is __syncthreads(). On the CPU the block's 1024 threads run as 1024 coroutines, one at a
// time, in a fixed order: thread 0 runs until its block_sync() (or its return), then thread 1, ... 1023; then the
// next round. So a missing block_sync() fails every run: without the first, thread 0 reads the tiles before anyone
// else wrote them (they hold NaN); without the second, thread 0 overwrites its elements with the next step's before
// the others read this step's.
//
// Checked against A.double() @ B.double() on awkward shapes (1 x 1 x 1, 7 x 31 x 33, ..., M, N, K all different
// and not multiples of 32), with NaN in the memory after A, B and C (a read or a write past the end is caught),
// and for each barrier on inputs that show it missing. On a GPU also on speed: at least 70% of the lesson's
// matmul_smem_kernel at 2048 x 2048 x 2048 (a tile loaded with tx walking down a column is correct but slow).
// Grade it with `from kit.grade import check; check("ex9_matmul_tile")`.
#pragma once
#include <cstdint>

#include "ex9_matmul_tile_launch.h"  // kEx9Tile (32) and the launchers

#ifdef __CUDA_ARCH__
__device__ void ex9_hold_back();  // with stagger=True, warps 1-31 wait ~50 us (ex9_matmul_tile.cu)
__device__ inline void block_sync() {
    __syncthreads();
    ex9_hold_back();
}
#else
void block_sync();  // the CPU's barrier among the block's coroutines (ex9_matmul_tile_cpu.cpp)
#endif

// One thread: (tx, ty) of block (bx, by); As, Bs: the block's two 32 x 32 tiles in shared memory.
// TODO (roughly 10 lines): row and col; acc = 0; for each k0: load As[ty][tx] and Bs[ty][tx] (0 past an edge),
// block_sync(), 32 multiply-adds from the tiles, block_sync(); then c[row * N + col] = acc if inside C.
KIT_HD inline void matmul_tile_thread(int tx, int ty, int64_t bx, int64_t by, float (*As)[kEx9Tile],
                                      float (*Bs)[kEx9Tile], float* c, const float* a, const float* b, int64_t M,
                                      int64_t N, int64_t K) {
    const int64_t row = by * kEx9Tile + ty, col = bx * kEx9Tile + tx;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += kEx9Tile) {
        As[ty][tx] = row < M && k0 + tx < K ? a[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? b[(k0 + ty) * N + col] : 0.0f;
        block_sync();  // every element of the tiles written before any thread reads them
        for (int k = 0; k < kEx9Tile; k++) acc += As[ty][k] * Bs[k][tx];
        block_sync();  // every thread done with the tiles before any overwrites them
    }
    if (row < M && col < N) c[row * N + col] = acc;
}
