// Exercise 9, answered: the lesson's matmul_smem_kernel, one thread's part.
#pragma once
#include "ex9_matmul_tile_given.h"

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
