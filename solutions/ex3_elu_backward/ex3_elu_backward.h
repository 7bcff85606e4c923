// Exercise 3 (end of 02_elu.ipynb): ELU's backward.
//
// Forward, given:  y = x                      for x > 0
//                  y = alpha * (exp(x) - 1)   for x <= 0
// Backward: autograd hands you grad_out = dL/dy and wants grad_in = dL/dx = grad_out * dy/dx. Work dy/dx out
// on paper for both branches first; mind which branch x == 0 belongs to (PyTorch's F.elu puts it with x <= 0).
// float32 and float64; the CPU runs the same thread functions, so a laptop can do this exercise too.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

constexpr int kEx3Threads = 256;

KIT_HD inline float kit_exp(float x) { return expf(x); }
KIT_HD inline double kit_exp(double x) { return exp(x); }
KIT_HD inline float kit_expm1(float x) { return expm1f(x); }
KIT_HD inline double kit_expm1(double x) { return expm1(x); }

template <typename T>
KIT_HD inline void elu_forward_thread(int64_t i, T* y, const T* x, T alpha, int64_t n) {
    if (i < n) y[i] = x[i] > T(0) ? x[i] : alpha * kit_expm1(x[i]);  // expm1: exact near 0, unlike exp(x) - 1
}

// One thread's work for the backward: element i.
// TODO (roughly 2 lines): grad_in[i] = grad_out[i] * dy/dx at x[i], for the threads that have an element.
template <typename T>
KIT_HD inline void elu_backward_thread(int64_t i, T* grad_in, const T* grad_out, const T* x, T alpha, int64_t n) {
    if (i < n) grad_in[i] = x[i] > T(0) ? grad_out[i] : grad_out[i] * alpha * kit_exp(x[i]);
}

void ex3_elu_cpu(bool backward, bool f64, void* out, const void* in, const void* x, double alpha, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex3_elu_cuda(bool backward, bool f64, void* out, const void* in, const void* x, double alpha, int64_t n,
                         cudaStream_t stream);
#endif
