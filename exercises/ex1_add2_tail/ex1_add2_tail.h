// Exercise 1: add2 for any size. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex1_add2_tail_given.h"

// One thread's work: thread number i (0 .. blocks * 256 - 1) of the whole grid.
// TODO (roughly 2 lines): c[i] = a[i] + b[i], for the threads that have an element.
KIT_HD inline void add2_tail_thread(int64_t i, float* c, const float* a, const float* b, int64_t n) {
}
