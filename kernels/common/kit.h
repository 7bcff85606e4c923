// kit.h: what every kernel translation unit of the kit shares.
//
// Torch-free on purpose. A .cu that includes this (and CUDA's own headers) compiles in about a second;
// one that includes <torch/extension.h> takes about a minute, and the kit recompiles a kernel on every
// edit. The op's binding file (the only one that includes torch) maps tensors to the raw pointers,
// sizes and DType below.
#ifndef LABKIT_KIT_H  // an include guard, not #pragma once: see building/precompiled_header.py
#define LABKIT_KIT_H
#include <cstdint>
#include <cstring>

// A function both the CPU and the GPU can run (the exercises' "thread" functions are written once, for both).
#ifdef __CUDACC__
#define KIT_HD __host__ __device__
#else
#define KIT_HD
#endif

// A value's bits as another type of the same size (C++20's std::bit_cast). memcpy is the well-defined way in
// C++17; g++ and nvcc (host and device) turn it into a register move. f32_bits and f32_from_bits build the
// 16-bit conversions (cpu_half.h) and ELU's 2^j (elu.h).
template <typename To, typename From>
inline KIT_HD To bit_cast(const From& v) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of one size");
    To out;
    memcpy(&out, &v, sizeof(To));
    return out;
}
inline KIT_HD uint32_t f32_bits(float f) { return bit_cast<uint32_t>(f); }
inline KIT_HD float f32_from_bits(uint32_t u) { return bit_cast<float>(u); }

// Blocks of `b` threads needed to cover `a` elements. Sizes are int64_t: a tensor can hold more than
// 2^31 elements (8 GiB of float), and an `int n` silently wraps there.
inline constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The element types the kit's kernels are written for: torch's float32, float64, float16, bfloat16.
enum class DType { f32, f64, f16, bf16 };

inline const char* dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "float32";
        case DType::f64: return "float64";
        case DType::f16: return "float16";
        case DType::bf16: return "bfloat16";
    }
    return "?";
}

#endif  // LABKIT_KIT_H
