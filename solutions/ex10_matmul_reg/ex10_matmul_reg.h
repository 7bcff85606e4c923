// Exercise 10, answered: each step's 16 values from shared memory into registers, their 64 products into the
// accumulators; then the outputs that lie inside C.
#pragma once
#include "ex10_matmul_reg_given.h"

KIT_HD inline void outer_products(const float (*As)[kEx10BK], const float (*Bs)[kEx10BN], int trow, int tcol,
                                  float (*acc)[kEx10TN]) {
    for (int k = 0; k < kEx10BK; k++) {
        float am[kEx10TM], bn[kEx10TN];
        for (int i = 0; i < kEx10TM; i++) am[i] = As[trow * kEx10TM + i][k];
        for (int j = 0; j < kEx10TN; j++) bn[j] = Bs[k][tcol * kEx10TN + j];
        for (int i = 0; i < kEx10TM; i++)
            for (int j = 0; j < kEx10TN; j++) acc[i][j] += am[i] * bn[j];
    }
}

KIT_HD inline void store_outputs(const float (*acc)[kEx10TN], float* c, int64_t row0, int64_t col0, int64_t M,
                                 int64_t N) {
    for (int i = 0; i < kEx10TM; i++) {
        for (int j = 0; j < kEx10TN; j++) {
            const int64_t row = row0 + i, col = col0 + j;
            if (row < M && col < N) c[row * N + col] = acc[i][j];
        }
    }
}
