// kit.h: what every kernel translation unit of the kit shares.
//
// Torch-free on purpose. A .cu that includes this (and CUDA's own headers) compiles in about a second;
// one that includes <torch/extension.h> takes about a minute, and the kit recompiles a kernel on every
// edit. The op's binding file (the only one that includes torch) maps tensors to the raw pointers,
// sizes and DType below.
#pragma once
#include <cstdint>

// A function both the CPU and the GPU can run (the exercises' "thread" functions are written once, for both).
#ifdef __CUDACC__
#define KIT_HD __host__ __device__
#else
#define KIT_HD
#endif

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
