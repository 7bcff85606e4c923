// add2_cpu.cpp: c = a + b on the CPU, for every dtype the kit knows.
//
// One plain loop. At -O3 the compiler turns the float and double cases into SIMD code on its own;
// the 16-bit types go through float (load/store in cpu_half.h), as PyTorch computes them.
#include "add2.h"
#include "cpu_half.h"

template <typename T>
static void add2_loop(T* c, const T* a, const T* b, int64_t n) {
    for (int64_t i = 0; i < n; i++) store(&c[i], load(a[i]) + load(b[i]));
}

void add2_cpu(DType dtype, void* c, const void* a, const void* b, int64_t n) {
    switch (dtype) {
        case DType::f32: return add2_loop((float*)c, (const float*)a, (const float*)b, n);
        case DType::f64: return add2_loop((double*)c, (const double*)a, (const double*)b, n);
        case DType::f16: return add2_loop((half_t*)c, (const half_t*)a, (const half_t*)b, n);
        case DType::bf16: return add2_loop((bf16_t*)c, (const bf16_t*)a, (const bf16_t*)b, n);
    }
}
