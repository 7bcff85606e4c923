// matmul.h: the torch-free entry points of matmul, shared by the kernels (matmul_cpu.cpp, matmul.cu) and the
// binding (matmul.cpp).
//
// C = A @ B for row-major, contiguous A (M x K), B (K x N) and C (M x N): C[i][j] = sum over k of A[i][k] B[k][j].
// Accumulated in float for float32, float16 and bfloat16, in double for float64; each result is stored in the
// inputs' dtype (rounded once), as torch.matmul does. K = 0 gives zeros.
#pragma once
#include <cstdint>

#include "kit.h"

// C = A @ B on the CPU. M, N, K >= 0.
void matmul_cpu(DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The lesson's versions, simplest first (matmul.cu explains each). 1-6 take float32, 7 (tensor cores) float16
// and bfloat16; kMatmulFast is what ops.matmul runs, for every dtype.
enum MatmulVersion : int {
    kMatmulFast = 0,
    kMatmulNaive = 1,
    kMatmulCoalesced = 2,
    kMatmulSmem = 3,
    kMatmulReg1d = 4,
    kMatmulReg2d = 5,
    kMatmulVec = 6,
    kMatmulWmma = 7,
};

// Whether `device` has the tensor cores version 7 needs (bfloat16 WMMA: compute capability 8.0, Ampere, or newer).
bool matmul_wmma_supported(int device);

// C = A @ B on the GPU with `version`, launched on `stream`, returning the launch's error (cudaSuccess if none).
// M, N, K >= 1 (the binding handles empty shapes).
cudaError_t matmul_cuda(int version, DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N,
                        int64_t K, int device, cudaStream_t stream);
#endif
