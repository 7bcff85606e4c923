// The CPU path of exercise 5 (there is nothing to choose on a CPU). Nothing to edit here.
#include "ex5_device_guard_given.h"

void ex5_add2_cpu(float* c, const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
