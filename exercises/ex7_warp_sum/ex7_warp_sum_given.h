// What exercise 7 gives: the block size and the launchers (the binding includes this alone, so an edit of
// ex7_warp_sum.h recompiles the kernel files, not the binding). Nothing to edit here.
#pragma once
#include <cstdint>

#include "cpu_warp.h"  // Lanes, shfl_down, lane0, atomic_add: the same on the GPU and the CPU

constexpr int kEx7Threads = 256;  // 8 warps per block

void ex7_warp_sum_cpu(float* out, const float* x, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex7_warp_sum_cuda(float* out, const float* x, int64_t n, cudaStream_t stream);
#endif
