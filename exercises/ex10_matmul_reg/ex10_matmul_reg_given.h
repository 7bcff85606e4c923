// What exercise 10 gives: the tiles' sizes, the loading of a step's tiles and the launchers (the binding includes
// this alone, so an edit of ex10_matmul_reg.h recompiles the kernel files, not the binding: torch's headers take
// ~7 s). Nothing to edit here.
#pragma once
#include <cstdint>

#include "kit.h"

// The lesson's reg2d sizes: a block's tile of C (kEx10BM x kEx10BN), the depth of a step along k (kEx10BK), one
// thread's tile of C (kEx10TM x kEx10TN).
constexpr int kEx10BM = 128, kEx10BN = 128, kEx10BK = 8, kEx10TM = 8, kEx10TN = 8;
constexpr int kEx10Threads = (kEx10BM / kEx10TM) * (kEx10BN / kEx10TN);  // 256

// Given: thread t's share of loading one step's tiles (4 elements of each), 0 past an edge. row0, col0: the block's
// first row and column of C; k0: the step's first k.
KIT_HD inline void load_tiles_thread(int t, float (*As)[kEx10BK], float (*Bs)[kEx10BN], const float* a,
                                     const float* b, int64_t row0, int64_t col0, int64_t k0, int64_t M, int64_t N,
                                     int64_t K) {
    for (int e = t; e < kEx10BM * kEx10BK; e += kEx10Threads) {
        const int r = e / kEx10BK, k = e % kEx10BK;
        As[r][k] = row0 + r < M && k0 + k < K ? a[(row0 + r) * K + k0 + k] : 0.0f;
    }
    for (int e = t; e < kEx10BK * kEx10BN; e += kEx10Threads) {
        const int k = e / kEx10BN, col = e % kEx10BN;
        Bs[k][col] = k0 + k < K && col0 + col < N ? b[(k0 + k) * N + col0 + col] : 0.0f;
    }
}

void ex10_matmul_reg_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex10_matmul_reg_cuda(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                 cudaStream_t stream);
#endif
