// elu_cpu.cpp: y = elu(x) and its gradient on the CPU, for every dtype the kit knows.
//
// Plain loops, computed as the GPU computes them: float32 and float64 with the C library's expm1 and
// exp; float16 and bfloat16 in float (load/store in cpu_half.h), with expm1_short (elu.h), the very
// function the GPU runs for them (it rounds identically on both). So the CPU tests, which run
// everywhere, CI included, also check the GPU's 16-bit arithmetic, on all 65536 inputs.
#include "cpu_half.h"
#include "elu.h"

// What one element of T is computed in: float for float and the 16-bit types, double for double.
template <typename T>
using compute_t = decltype(load(T{}));

template <typename T>
static compute_t<T> expm1_for(compute_t<T> x) {
    if constexpr (sizeof(T) == 2) {
        return expm1_short(x);
    } else {
        return std::expm1(x);
    }
}

// PyTorch's tests and order: x > 0 ? x : alpha * expm1(x) (NaN gives NaN) ...
template <typename T>
static void elu_loop(T* y, const T* x, double alpha, int64_t n) {
    const compute_t<T> a = compute_t<T>(alpha);  // float(alpha) but for double, as PyTorch rounds it
    for (int64_t i = 0; i < n; i++) {
        const compute_t<T> v = load(x[i]);
        store(&y[i], v > 0 ? v : a * expm1_for<T>(v));
    }
}

// ... and x <= 0 ? dy * alpha * e^x : dy (NaN x passes dy through), multiplied left to right.
template <typename T>
static void elu_backward_loop(T* dx, const T* dy, const T* x, double alpha, int64_t n) {
    const compute_t<T> a = compute_t<T>(alpha);
    for (int64_t i = 0; i < n; i++) {
        const compute_t<T> v = load(x[i]), g = load(dy[i]);
        store(&dx[i], v <= 0 ? g * a * std::exp(v) : g);
    }
}

void elu_cpu(DType dtype, void* y, const void* x, double alpha, int64_t n) {
    switch (dtype) {
        case DType::f32: return elu_loop((float*)y, (const float*)x, alpha, n);
        case DType::f64: return elu_loop((double*)y, (const double*)x, alpha, n);
        case DType::f16: return elu_loop((half_t*)y, (const half_t*)x, alpha, n);
        case DType::bf16: return elu_loop((bf16_t*)y, (const bf16_t*)x, alpha, n);
    }
}

void elu_backward_cpu(DType dtype, void* dx, const void* dy, const void* x, double alpha, int64_t n) {
    switch (dtype) {
        case DType::f32: return elu_backward_loop((float*)dx, (const float*)dy, (const float*)x, alpha, n);
        case DType::f64: return elu_backward_loop((double*)dx, (const double*)dy, (const double*)x, alpha, n);
        case DType::f16: return elu_backward_loop((half_t*)dx, (const half_t*)dy, (const half_t*)x, alpha, n);
        case DType::bf16: return elu_backward_loop((bf16_t*)dx, (const bf16_t*)dy, (const bf16_t*)x, alpha, n);
    }
}
