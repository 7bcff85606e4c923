// sum.h: the torch-free entry points of sum, shared by the kernels (sum_cpu.cpp, sum.cu) and the binding (sum.cpp).
//
// Every sum here is a sum of rows: `rows` rows of `cols` contiguous elements, one result per row. The sum of
// a whole tensor is one row of numel elements; x.sum(dim=-1) is numel / size(-1) rows of size(-1).
// Accumulated in float for float32, float16 and bfloat16, in double for float64; each result is stored in
// the input's dtype (rounded once), as torch.sum does.
#pragma once
#include <cstdint>

#include "kit.h"

// out[r] = x[r * cols + 0] + ... + x[r * cols + cols - 1], for r < rows, on the CPU.
void sum_rows_cpu(DType dtype, void* out, const void* x, int64_t rows, int64_t cols);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same on the GPU, launched on `stream`, returning the launch's error (cudaSuccess if none). Large rows
// are split across blocks whose partial sums go to `workspace`, of sum_rows_workspace_bytes(...) bytes on
// the same GPU (0 bytes: pass nullptr); a second kernel adds them in a fixed order, so a given input gives
// the same bits on every run. rows >= 1 and cols >= 1.
int64_t sum_rows_workspace_bytes(DType dtype, int64_t rows, int64_t cols, int device);
cudaError_t sum_rows_cuda(DType dtype, void* out, const void* x, int64_t rows, int64_t cols, void* workspace,
                          int device, cudaStream_t stream);

// The lesson's versions 1-4 (float32, the whole tensor of n >= 1 elements; sum.cu explains each).
// version 1 (atomics) needs no workspace; 2-4 need sum_version_workspace_bytes(version, n).
int64_t sum_version_workspace_bytes(int version, int64_t n);
cudaError_t sum_version_cuda(int version, float* out, const float* x, int64_t n, float* workspace, cudaStream_t stream);
#endif
