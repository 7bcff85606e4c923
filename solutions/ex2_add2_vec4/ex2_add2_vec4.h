// Exercise 2 (end of 01_add2.ipynb): add2 with 16-byte loads, and a correct tail.
//
// add2 waits on memory, not on arithmetic. One float per load means four load instructions where one would do:
// an f4 (16 bytes) is the widest load a thread can issue. So thread p handles elements 4p .. 4p+3 with one f4
// load of a, one of b and one f4 store. When n is not a multiple of 4, the last pack is only partly inside the
// tensors: those elements must be added one by one, and nothing past n touched.
// Graded on correctness everywhere, and on a GPU also on bandwidth, against a plain copy of the same bytes.
#pragma once
#include <cstdint>

#include "kit.h"

constexpr int kEx2Threads = 256;
struct alignas(16) f4 { float x, y, z, w; };

// One thread's work: pack p (elements 4p .. 4p+3). The pointers are 16-byte aligned (the binding checks).
// TODO (roughly 8 lines): a whole pack inside the tensor: f4 loads, four adds, one f4 store;
//                         the last, partial pack: element by element, only the elements < n.
KIT_HD inline void add2_vec4_thread(int64_t p, float* c, const float* a, const float* b, int64_t n) {
    const int64_t i = 4 * p;
    if (i + 4 <= n) {
        const f4 x = reinterpret_cast<const f4*>(a)[p];
        const f4 y = reinterpret_cast<const f4*>(b)[p];
        reinterpret_cast<f4*>(c)[p] = f4{x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w};
    } else {
        for (int64_t j = i; j < n; j++) c[j] = a[j] + b[j];
    }
}

void ex2_add2_vec4_cpu(float* c, const float* a, const float* b, int64_t n);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex2_add2_vec4_cuda(float* c, const float* a, const float* b, int64_t n, cudaStream_t stream);
#endif
