// The CPU as a (very slow) GPU: every thread of the same grid, one after another. Nothing to edit here.
#include "ex1_add2_tail.h"

void ex1_add2_tail_cpu(float* c, const float* a, const float* b, int64_t n) {
    const int64_t blocks = cdiv(n, kEx1Threads);
    for (int64_t block = 0; block < blocks; block++)
        for (int t = 0; t < kEx1Threads; t++) add2_tail_thread(block * kEx1Threads + t, c, a, b, n);
}
