// The CPU as a (very slow) GPU: the same grid of 128 x 128 tiles of C, one block after another. Nothing to edit here.
//
// The kernel's barriers are in the given code, around the loading, so the CPU can run a block in phases with the
// same meaning: each step, all 256 threads load their elements of the tiles (the first __syncthreads()), then each
// thread does its outer_products (the second), and after the last step each thread its store_outputs.
#include <limits>
#include <vector>

#include "ex10_matmul_reg.h"

void ex10_matmul_reg_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    float As[kEx10BM][kEx10BK], Bs[kEx10BK][kEx10BN];  // the block's shared memory
    std::vector<float> acc(size_t(kEx10Threads) * kEx10TM * kEx10TN);  // each thread's registers
    auto acc_of = [&](int t) { return reinterpret_cast<float(*)[kEx10TN]>(acc.data() + t * kEx10TM * kEx10TN); };
    constexpr int kCols = kEx10BN / kEx10TN;  // threads along a row of the block's tile
    for (int64_t row0 = 0; row0 < M; row0 += kEx10BM) {
        for (int64_t col0 = 0; col0 < N; col0 += kEx10BN) {
            for (float& v : acc) v = 0.0f;
            for (int64_t k0 = 0; k0 < K; k0 += kEx10BK) {
                for (auto& r : As)
                    for (float& v : r) v = std::numeric_limits<float>::quiet_NaN();
                for (auto& r : Bs)
                    for (float& v : r) v = std::numeric_limits<float>::quiet_NaN();
                for (int t = 0; t < kEx10Threads; t++) load_tiles_thread(t, As, Bs, a, b, row0, col0, k0, M, N, K);
                for (int t = 0; t < kEx10Threads; t++) outer_products(As, Bs, t / kCols, t % kCols, acc_of(t));
            }
            for (int t = 0; t < kEx10Threads; t++)
                store_outputs(acc_of(t), c, row0 + t / kCols * kEx10TM, col0 + t % kCols * kEx10TN, M, N);
        }
    }
}
