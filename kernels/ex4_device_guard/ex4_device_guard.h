// Exercise 4 (end of 03_multi_gpu.ipynb): fix the seed's wrong-GPU launch. The kernel is fine; the binding
// (ex4_device_guard.cpp) launches it on whatever GPU is current, on the legacy default stream.
#pragma once
#include <cstdint>

#include "kit.h"

void ex4_add2_cpu(float* c, const float* a, const float* b, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex4_add2_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream);
#endif
