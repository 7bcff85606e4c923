// matmul_cpu.cpp: C = A @ B on the CPU, cache-blocked, for every dtype the kit knows.
//
// The textbook loop `for i, for j, for k: c[i][j] += a[i][k] * b[k][j]` walks B down a column: each step jumps
// N elements, a new cache line per multiply-add. Swapping the two inner loops (i-k-j) makes the innermost loop
// `c[i][j] += a_ik * b[k][j]` over j: both rows are contiguous, a_ik is one register, and the compiler turns it
// into SIMD multiply-adds (4 floats per SSE instruction, 8 with AVX2).
// Blocking: a matmul does 2MNK flops on (MK + KN + MN) elements, so each element could be reused ~N times, but
// only while it is still in cache. Within a block of kBlockM rows x kBlockN columns of C, the block of C
// (64 x 256 floats = 64 KB) stays in L2 while kBlockK rows of B (64 x 256 floats = 64 KB) go past it; each
// row of the B block is reused by 64 rows of C before it is evicted.
// Every C[i][j] adds its K products in the order k = 0, 1, ..., K - 1.
#include <vector>

#include "cpu_half.h"
#include "matmul.h"

constexpr int64_t kBlockM = 64, kBlockN = 256, kBlockK = 64;

// C = A @ B, all of type A_t (float or double). C is overwritten.
template <typename A_t>
static void matmul_blocked(A_t* __restrict c, const A_t* __restrict a, const A_t* __restrict b, int64_t M, int64_t N,
                           int64_t K) {
    for (int64_t i = 0; i < M * N; i++) c[i] = 0;
    for (int64_t i0 = 0; i0 < M; i0 += kBlockM) {
        const int64_t i1 = i0 + kBlockM < M ? i0 + kBlockM : M;
        for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
            const int64_t j1 = j0 + kBlockN < N ? j0 + kBlockN : N;
            for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
                const int64_t k1 = k0 + kBlockK < K ? k0 + kBlockK : K;
                for (int64_t i = i0; i < i1; i++) {
                    A_t* __restrict ci = c + i * N;
                    for (int64_t k = k0; k < k1; k++) {
                        const A_t aik = a[i * K + k];
                        const A_t* __restrict bk = b + k * N;
                        for (int64_t j = j0; j < j1; j++) ci[j] += aik * bk[j];
                    }
                }
            }
        }
    }
}

// 16-bit inputs: widened to float once (MK + KN conversions rather than 2MNK in the inner loop), multiplied in
// float, and each result rounded once.
template <typename T>
static void matmul_16bit(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K) {
    std::vector<float> af(M * K), bf(K * N), cf(M * N);
    for (int64_t i = 0; i < M * K; i++) af[i] = load(a[i]);
    for (int64_t i = 0; i < K * N; i++) bf[i] = load(b[i]);
    matmul_blocked(cf.data(), af.data(), bf.data(), M, N, K);
    for (int64_t i = 0; i < M * N; i++) store(&c[i], cf[i]);
}

void matmul_cpu(DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K) {
    switch (dtype) {
        case DType::f32: return matmul_blocked((float*)c, (const float*)a, (const float*)b, M, N, K);
        case DType::f64: return matmul_blocked((double*)c, (const double*)a, (const double*)b, M, N, K);
        case DType::f16: return matmul_16bit((half_t*)c, (const half_t*)a, (const half_t*)b, M, N, K);
        case DType::bf16: return matmul_16bit((bf16_t*)c, (const bf16_t*)a, (const bf16_t*)b, M, N, K);
    }
}
