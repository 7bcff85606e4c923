// What exercise 4 gives: the block size, exp and expm1 for both float types, ELU's forward and the launchers (the
// binding includes this alone, so an edit of ex4_elu_backward.h recompiles the kernel files, not the binding).
// Nothing to edit here.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

constexpr int kEx4Threads = 256;

KIT_HD inline float kit_exp(float x) { return expf(x); }
KIT_HD inline double kit_exp(double x) { return exp(x); }
KIT_HD inline float kit_expm1(float x) { return expm1f(x); }
KIT_HD inline double kit_expm1(double x) { return expm1(x); }

template <typename T>
KIT_HD inline void elu_forward_thread(int64_t i, T* y, const T* x, T alpha, int64_t n) {
    if (i < n) y[i] = x[i] > T(0) ? x[i] : alpha * kit_expm1(x[i]);  // expm1: exact near 0, unlike exp(x) - 1
}

void ex4_elu_cpu(bool backward, bool f64, void* out, const void* in, const void* x, double alpha, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex4_elu_cuda(bool backward, bool f64, void* out, const void* in, const void* x, double alpha, int64_t n,
                         cudaStream_t stream);
#endif
