// What the binding needs of exercise 10: the tiles' sizes and the launchers. Kept out of ex10_matmul_reg.h so that
// an edit there recompiles the kernel files alone, not the binding (torch's headers: ~7 s). Nothing to edit here.
#pragma once
#include <cstdint>

#include "kit.h"

// The lesson's reg2d sizes: a block's tile of C (kEx10BM x kEx10BN), the depth of a step along k (kEx10BK), one
// thread's tile of C (kEx10TM x kEx10TN).
constexpr int kEx10BM = 128, kEx10BN = 128, kEx10BK = 8, kEx10TM = 8, kEx10TN = 8;
constexpr int kEx10Threads = (kEx10BM / kEx10TM) * (kEx10BN / kEx10TN);  // 256

void ex10_matmul_reg_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex10_matmul_reg_cuda(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                 cudaStream_t stream);
#endif
