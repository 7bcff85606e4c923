// debug_lab_cpu.cpp: the debugging lesson's kernels on the CPU, where they have an analogue.
//
// printf from C++ has the same problem in a notebook as printf from the GPU: it writes to file descriptor 1
// of the process, which is not the cell's output. The out-of-bounds write is the same bug as on the GPU, and
// just as quiet: a few floats past the end of a heap buffer usually break nothing visible (until a later
// free() finds its bookkeeping overwritten), and AddressSanitizer (-fsanitize=address) names the line.
// Far past the end, the CPU stops the process at once with SIGSEGV, where the GPU reports later.
// The shared-memory race has no CPU analogue here (one thread runs the loop); block_reverse_cpu computes
// what the right GPU kernel does.
#include <cstdio>

#include "debug_lab.h"

void printf_cpu(const float* x, int64_t n) {
    for (int64_t i = 0; i < n; i++) printf("cpu: x[%lld] = %g\n", (long long)i, x[i]);
}

void oob_write_cpu(float* y, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        y[i] = float(i);  // out of bounds for every i >= n
    }
}

void block_reverse_cpu(float* y, const float* x, int64_t n) {
    for (int64_t base = 0; base < n; base += kTile) {
        for (int t = 0; t < kTile; t++) y[base + t] = x[base + kTile - 1 - t];
    }
}
