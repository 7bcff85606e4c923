// The CPU runs every thread of the same grid, one after another. Nothing to edit here.
#include "ex2_add2_vec4.h"

void ex2_add2_vec4_cpu(float* c, const float* a, const float* b, int64_t n) {
    const int64_t blocks = cdiv(cdiv(n, 4), kEx2Threads);
    for (int64_t block = 0; block < blocks; block++)
        for (int t = 0; t < kEx2Threads; t++) add2_vec4_thread(block * kEx2Threads + t, c, a, b, n);
}
