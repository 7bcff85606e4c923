// kit.h: what every kernel translation unit of the kit shares.
//
// Torch-free on purpose. A .cu that includes this (and CUDA's own headers) compiles in about a second;
// one that includes <torch/extension.h> takes about a minute, and the kit recompiles a kernel on every
// edit. The op's binding file (the only one that includes torch) maps tensors to the raw pointers,
// sizes and DType below.
#pragma once
#include <cstdint>
#include <cstring>

// A function both the CPU and the GPU can run (the exercises' "thread" functions are written once, for both).
#ifdef __CUDACC__
#define KIT_HD __host__ __device__
#else
#define KIT_HD
#endif

// A float's 32 bits and back, unchanged (the 16-bit conversions and ELU's 2^j are built from them). On the GPU
// one register move; on the CPU memcpy, the one well-defined way in C++17, which compilers turn into a move too.
inline KIT_HD uint32_t f32_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}
inline KIT_HD float f32_from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

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
