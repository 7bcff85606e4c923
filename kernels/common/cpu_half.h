// cpu_half.h: float16 and bfloat16 on the CPU without torch, as 16 raw bits plus exact conversions.
//
// CPU kernels compute half types in float (as PyTorch does) and round once when storing. The rounding
// must be round-to-nearest-even, with subnormals, infinities and NaN handled, or results drift from
// PyTorch's by one ulp. These are the same bit tricks c10/util/Half.h and BFloat16.h use (from
// Maratyszcza's FP16 library); they need IEEE float arithmetic, so never build them with -ffast-math.
#pragma once
#include <cstdint>

#include "kit.h"  // f32_bits, f32_from_bits

struct half_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

// bfloat16 is the top half of a float: widening is a shift, narrowing rounds the low 16 bits away.
inline float to_float(bf16_t h) { return f32_from_bits(uint32_t(h.bits) << 16); }
inline bf16_t to_bf16(float f) {
    if (f != f) return {0x7FC0};                              // NaN stays a quiet NaN
    uint32_t u = f32_bits(f);
    return {uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};  // +0x7FFF, +1 more if odd: ties to even
}

// float16 has 5 exponent bits: the float is rescaled so that the FPU's own rounding does the work.
inline float to_float(half_t h) {
    const uint32_t w = uint32_t(h.bits) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    const float normalized = f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    const float denormalized = f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t result = sign | (two_w < (1u << 27) ? f32_bits(denormalized) : f32_bits(normalized));
    return f32_from_bits(result);
}
inline half_t to_half(float f) {
    float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;  // overflow to inf, round subnormals
    const uint32_t w = f32_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = f32_from_bits((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = f32_bits(base);
    const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
    return {uint16_t((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign))};
}

// What a CPU kernel computes in: float for the 16-bit types (as PyTorch does), the type itself otherwise.
// load() widens, store() narrows with one rounding, so one template body serves all four dtypes.
inline float load(float x) { return x; }
inline double load(double x) { return x; }
inline float load(half_t x) { return to_float(x); }
inline float load(bf16_t x) { return to_float(x); }
inline void store(float* p, float v) { *p = v; }
inline void store(double* p, double v) { *p = v; }
inline void store(half_t* p, float v) { *p = to_half(v); }
inline void store(bf16_t* p, float v) { *p = to_bf16(v); }
