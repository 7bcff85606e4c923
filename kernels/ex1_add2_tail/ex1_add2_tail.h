// Exercise 1 (end of 01_add2.ipynb): add2 for any size.
//
// The launch gives every element a thread: cdiv(n, 256) blocks of 256 threads. When n is not a multiple of 256,
// the last block has threads with no element (the "tail"), and they must do nothing: a thread that writes
// c[i] for i >= n overwrites whatever lies after c in memory, silently.
//
// The CPU build runs this same function for every thread of the same grid, one after another, so you can do
// this exercise on a laptop. Grade it with `from kit.grade import check; check("ex1_add2_tail")`.
#pragma once
#include <cstdint>

#include "kit.h"

constexpr int kEx1Threads = 256;

// One thread's work: thread number i (0 .. blocks * 256 - 1) of the whole grid.
// TODO (roughly 2 lines): c[i] = a[i] + b[i], for the threads that have an element.
KIT_HD inline void add2_tail_thread(int64_t i, float* c, const float* a, const float* b, int64_t n) {
}

void ex1_add2_tail_cpu(float* c, const float* a, const float* b, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex1_add2_tail_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream);
#endif
