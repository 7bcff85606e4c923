// What exercise 2 gives: the block size, the 16-byte pack and the launchers (the binding includes this alone, so an
// edit of ex2_add2_vec4.h recompiles the kernel files, not the binding). Nothing to edit here.
#pragma once
#include <cstdint>

#include "kit.h"

constexpr int kEx2Threads = 256;
struct alignas(16) f4 { float x, y, z, w; };

void ex2_add2_vec4_cpu(float* c, const float* a, const float* b, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex2_add2_vec4_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream);
#endif
