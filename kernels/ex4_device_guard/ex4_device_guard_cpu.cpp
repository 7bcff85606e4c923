// The CPU path of exercise 4 (there is nothing to choose on a CPU). Nothing to edit here.
#include "ex4_device_guard.h"

void ex4_add2_cpu(float* c, const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
