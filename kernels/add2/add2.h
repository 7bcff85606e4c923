// add2.h: the torch-free entry points of add2, shared by the kernels and the binding (add2.cpp).
#pragma once
#include <cstdint>

#include "kit.h"

// c[i] = a[i] + b[i] for i < n, on the CPU (add2_cpu.cpp). Pointers are of the type `dtype` names.
void add2_cpu(DType dtype, void* c, const void* a, const void* b, int64_t n);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same on the GPU (add2.cu): launched on `stream`, returning the launch's error (cudaSuccess if none).
cudaError_t add2_cuda(DType dtype, void* c, const void* a, const void* b, int64_t n, cudaStream_t stream);
// The add2 tutorial's kernel (notebook 01), float32 and n < 2^31 only: kept for comparison.
cudaError_t add2_seed_cuda(float* c, const float* a, const float* b, int n, cudaStream_t stream);
// Seed 003's fix for its wrong-GPU bug: cudaSetDevice(device) inside the launcher, then the default stream.
// It runs on the right GPU, but leaves that GPU current for the caller (03_multi_gpu.ipynb shows why that bites).
cudaError_t add2_set_device_cuda(int device, DType dtype, void* c, const void* a, const void* b, int64_t n);
#endif
