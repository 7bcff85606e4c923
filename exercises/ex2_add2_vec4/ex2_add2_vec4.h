// Exercise 2: add2 with 16-byte loads and a correct tail. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex2_add2_vec4_given.h"

// One thread's work: pack p (elements 4p .. 4p+3). The pointers are 16-byte aligned (the binding checks).
// TODO (roughly 8 lines): a whole pack inside the tensor: f4 loads, four adds, one f4 store;
//                         the last, partial pack: element by element, only the elements < n.
KIT_HD inline void add2_vec4_thread(int64_t p, float* c, const float* a, const float* b, int64_t n) {
}
