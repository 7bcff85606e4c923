// Exercise 10 (the matmul lesson): the inner loop of the 2-D register-blocked matmul, C = A @ B (float32,
// row-major: A is M x K, B is K x N, C is M x N), for any M, N, K.
//
// The lesson's matmul_reg2d_kernel (kernels/matmul/matmul.cu): a block of 256 threads computes a 128 x 128 tile of
// C, each thread an 8 x 8 tile of it, in 64 accumulators acc[i][j] that live in registers. Thread t is (trow, tcol)
// = (t / 16, t % 16): its outputs are rows trow * 8 + i and columns tcol * 8 + j of the block's tile. Each step
// along k the block loads a 128 x 8 tile of A (As[r][k] = A[block's row r][k0 + k]) and an 8 x 128 tile of B
// (Bs[k][col] = B[k0 + k][block's column col]) into shared memory, zeros past the edges. Given: that loading, the
// barriers around it and the loop over the steps (ex10_matmul_reg.cu, and ex10_matmul_reg_cpu.cpp for the CPU).
// Yours, two parts:
//  (a) outer_products: one step. For each k = 0 .. 7 of the tiles: read the thread's 8 values of A (As[trow * 8 + i]
//      [k], i = 0 .. 7) and 8 of B (Bs[k][tcol * 8 + j]) from shared memory into registers (two small arrays), then
//      their outer product, acc[i][j] += a_i * b_j: 64 multiply-adds from 16 values read from shared memory (the
//      smem kernel of exercise 9 reads 2 values per multiply-add).
//  (b) store_outputs: after the last step, the thread's 8 x 8 outputs into C: element (i, j) is C[row0 + i]
//      [col0 + j] (row0, col0: the thread's first row and column of C), stored only if it is inside C (the edge
//      blocks' tiles hang past C's last row and column).
// The loops have constant bounds (kEx10TM, ...): the compiler unrolls them, so acc[i][j] stays in registers.
//
// The CPU runs the same functions: one block at a time, each step's loading by all 256 threads, then each thread's
// outer_products (the barriers are where the given code has them), then each thread's store_outputs.
// Checked against A.double() @ B.double() on shapes whose M, N and K all differ and are not multiples of the tile
// (1 x 1 x 1, ..., 129 x 200 x 31), with NaN in the memory after C (a store past the edge is caught).
// Grade it with `from kit.grade import check; check("ex10_matmul_reg")`.
#pragma once
#include <cstdint>

#include "ex10_matmul_reg_launch.h"  // the sizes (kEx10BM = 128, ...) and the launchers

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

// (a) One step of thread (trow, tcol): acc[i][j] += the sum over k of As[trow * kEx10TM + i][k] *
// Bs[k][tcol * kEx10TN + j].
// TODO (roughly 7 lines): for each k: am[i] = As[...][k] for i < kEx10TM, bn[j] = Bs[k][...] for j < kEx10TN
// (two arrays of floats: registers); then acc[i][j] += am[i] * bn[j] for every i and j.
KIT_HD inline void outer_products(const float (*As)[kEx10BK], const float (*Bs)[kEx10BN], int trow, int tcol,
                                  float (*acc)[kEx10TN]) {
}

// (b) The thread's outputs: acc[i][j] is C[row0 + i][col0 + j], C being M x N (row-major, c[row * N + col]).
// TODO (roughly 5 lines): for each i < kEx10TM and j < kEx10TN: store it if that element is inside C.
KIT_HD inline void store_outputs(const float (*acc)[kEx10TN], float* c, int64_t row0, int64_t col0, int64_t M,
                                 int64_t N) {
}
