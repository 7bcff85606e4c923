// Exercise 10: the register-blocked inner loop of a matmul. The task and how it is graded: check.py, beside this
// file.
#pragma once
#include "ex10_matmul_reg_given.h"  // the sizes (kEx10BM = 128, ...) and the loading of the tiles

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
