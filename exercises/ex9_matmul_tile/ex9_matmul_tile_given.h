// What exercise 9 gives: the tile's size, the barrier and the launchers (the binding includes this alone, so an
// edit of ex9_matmul_tile.h recompiles the kernel files, not the binding: torch's headers take ~7 s). Nothing to
// edit here.
#pragma once
#include <cstdint>

#include "kit.h"

// 32 x 32: the lesson's smem kernel's tile (the speed check compares against it); a warp is one row of the tile.
constexpr int kEx9Tile = 32;

#ifdef __CUDA_ARCH__
__device__ void ex9_hold_back();  // with stagger=True, warps 1-31 wait ~50 us (ex9_matmul_tile.cu)
__device__ inline void block_sync() {
    __syncthreads();
    ex9_hold_back();
}
#else
void block_sync();  // the CPU's barrier among the block's coroutines (ex9_matmul_tile_cpu.cpp)
#endif

void ex9_matmul_tile_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex9_matmul_tile_cuda(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                 bool stagger, cudaStream_t stream);
#endif
