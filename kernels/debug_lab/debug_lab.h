// debug_lab.h: the torch-free entry points of the debugging lesson's kernels (05_debugging.ipynb), shared by
// the kernels (debug_lab.cu, debug_lab_cpu.cpp) and the binding (debug_lab.cpp).
//
// Two of these are wrong ON PURPOSE: oob_write writes past the end of its buffer when count > n, and
// smem_race (GPU) reads shared memory without the barrier. They exist to be caught; never copy them.
#pragma once
#include <cstdint>

#include "kit.h"

// The elements of one block of the shared-memory kernels (and their threads per block).
constexpr int kTile = 256;

// Print x[i] for i < n, one line each, with printf (C's stdout: file descriptor 1 of the process).
void printf_cpu(const float* x, int64_t n);
// y[i] = i for i < count. y holds n floats; count > n writes past its end (THE BUG, on purpose).
void oob_write_cpu(float* y, int64_t count);
// y = x reversed within each block of kTile elements (n is a multiple of kTile): what the GPU kernels compute.
void block_reverse_cpu(float* y, const float* x, int64_t n);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same on the GPU (debug_lab.cu): launched on `stream`, returning the launch's error (cudaSuccess if none).
cudaError_t printf_cuda(const float* x, int64_t n, cudaStream_t stream);
cudaError_t oob_write_cuda(float* y, int64_t count, cudaStream_t stream);
// race = true: smem_race_kernel (no barrier: a race); false: smem_reverse_kernel (right).
cudaError_t block_reverse_cuda(float* y, const float* x, int64_t n, bool race, cudaStream_t stream);
#endif
