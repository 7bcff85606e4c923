// elu.h: the torch-free entry points of elu, shared by the kernels and the binding (elu.cpp), and the one
// piece of arithmetic the CPU and GPU kernels share: expm1_short, the exp(x) - 1 of the 16-bit types.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

// y[i] = elu(x[i]) and the gradient dx[i] = dy[i] * elu'(x[i]), for i < n, on the CPU (elu_cpu.cpp).
// Pointers are of the type `dtype` names; alpha is rounded to float except for float64, as PyTorch does.
void elu_cpu(DType dtype, void* y, const void* x, double alpha, int64_t n);
void elu_backward_cpu(DType dtype, void* dx, const void* dy, const void* x, double alpha, int64_t n);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same on the GPU (elu.cu): launched on `stream`, returning the launch's error (cudaSuccess if none).
cudaError_t elu_cuda(DType dtype, void* y, const void* x, double alpha, int64_t n, cudaStream_t stream);
cudaError_t elu_backward_cuda(DType dtype, void* dx, const void* dy, const void* x, double alpha, int64_t n,
                              cudaStream_t stream);
// The ELU tutorial's two kernels (notebook 02), float32, alpha = 1 and n < 2^31 only: kept for comparison.
cudaError_t elu_seed_cuda(float* y, const float* x, int n, cudaStream_t stream);
cudaError_t elu_seed_smem_cuda(float* y, const float* x, int n, cudaStream_t stream);
#endif

// ----------------------------------------------------------------------------------------------
// expm1_short(x) = e^x - 1 for x <= 0, in float, within 1 ulp (0.92 at worst, checked for every float in
// [-32, 0]): what elu computes for float16 and bfloat16, on the GPU and (so that the CPU tests check the GPU's
// arithmetic) on the CPU.
//
// Why not expm1f, as for float32? A 16-bit ELU moves 4 bytes per element, so an H200 could do 1e12 of
// them a second; but CUDA's expm1f compiles to ~30 instructions (it handles every float, overflow and
// all), and the GPU issues ~3e13 a second: the arithmetic, not memory, would be the limit (PyTorch's
// 16-bit ELU stops at ~60% of a copy's bandwidth). ELU needs x <= 0 only, and this takes 17.
// Defined for x <= 0 and NaN; for x > 0 it returns a meaningless value, which elu never selects.
//
// How: x = j ln2 + f with j an integer and |f| <= ln2/2, so e^x - 1 = 2^j (e^f - 1) + (2^j - 1).
// e^f - 1 is a polynomial in f (N. Juffa's published minimax coefficients); 2^j is built from its bits.
// No cancellation near 0: there j = 0 and the result is the polynomial itself. Only fmaf, +, * and
// copysignf in a fixed order, no library exp: the CPU and the GPU round identically, bit for bit.
#ifdef __CUDACC__
#define ELU_HD __host__ __device__ __forceinline__
#else
#define ELU_HD inline
#endif

ELU_HD float expm1_short(float x) {
    const float x0 = x;
    x = x < -32.0f ? -32.0f : x;                       // e^-32 - 1 is -1 in float; keeps 2^j normal; NaN passes
    const float shifter = 12582912.0f;                 // 1.5 * 2^23: adding it rounds to an integer
    const float jm = fmaf(x, 1.44269504f, shifter);    // x / ln2 + shifter: j sits in the low bits
    const float j = jm - shifter;
    float f = fmaf(j, -6.93145752e-1f, x);             // f = x - j ln2, with ln2 in two parts (Cody-Waite)
    f = fmaf(j, -1.42860677e-6f, f);
    float r = 1.97350979e-4f;                          // e^f - 1 = f + f^2 (1/2 + f/6 + ...)
    r = fmaf(r, f, 1.39309070e-3f);
    r = fmaf(r, f, 8.33343994e-3f);
    r = fmaf(r, f, 4.16668020e-2f);
    r = fmaf(r, f, 1.66666716e-1f);
    r = fmaf(r, f, 4.99999970e-1f);
    const float p = fmaf(r, f * f, f);
    const float two_j = f32_from_bits((f32_bits(jm) << 23) + 0x3F800000u);  // exponent field j + 127
    const float y = fmaf(p, two_j, two_j - 1.0f);      // 2^j p + (2^j - 1), rounded once
    return copysignf(y, x0);                           // e^x - 1 has the sign of x, and of a zero x: -0 -> -0
}
