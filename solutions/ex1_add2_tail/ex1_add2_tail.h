// Exercise 1, answered: the threads past the end of the tensors do nothing.
#pragma once
#include "ex1_add2_tail_given.h"

KIT_HD inline void add2_tail_thread(int64_t i, float* c, const float* a, const float* b, int64_t n) {
    if (i < n) c[i] = a[i] + b[i];
}
