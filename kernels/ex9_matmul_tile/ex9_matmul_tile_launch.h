// What the binding needs of exercise 9: the tile's size and the launchers. Kept out of ex9_matmul_tile.h so that
// an edit there recompiles the kernel files alone, not the binding (torch's headers: ~7 s). Nothing to edit here.
#pragma once
#include <cstdint>

#include "kit.h"

// 32 x 32: the lesson's smem kernel's tile (the speed check compares against it); a warp is one row of the tile.
constexpr int kEx9Tile = 32;

void ex9_matmul_tile_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex9_matmul_tile_cuda(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                 bool stagger, cudaStream_t stream);
#endif
