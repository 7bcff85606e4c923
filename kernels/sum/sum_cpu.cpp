// sum_cpu.cpp: the sum of each row on the CPU, for every dtype the kit knows.
//
// Why not one `acc += x[i]` loop? Summing 2^24 values of about 100 one after another in float, the running
// sum passes 2^30 (1.07e9), where one float step (ulp) is 128: from there each value of 90-110 is rounded to
// exactly 128 as it is added, and the result comes out ~12% too large (notebook 06 measures it). Adding in a
// tree instead keeps the two sides of each addition of similar size, so each rounding is relative to a
// partial sum, not the whole: the error grows with log2(n), not n. This is a tree of blocks: 8 interleaved
// accumulators inside a block of kBlock elements (the compiler keeps them in one SIMD register), blocks
// combined pairwise.
// The order is fixed by n alone, so the same input gives the same bits on every run.
#include <type_traits>

#include "cpu_half.h"
#include "sum.h"

constexpr int64_t kBlock = 2048;  // elements summed with 8 accumulators before the tree takes over

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
static acc_t<T> sum_block(const T* x, int64_t n) {
    acc_t<T> acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += load(x[i + j]);
    for (int j = 0; i < n; i++, j++) acc[j] += load(x[i]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <typename T>
static acc_t<T> sum_tree(const T* x, int64_t n) {
    if (n <= kBlock) return sum_block(x, n);
    const int64_t half = cdiv(n / 2, kBlock) * kBlock;  // split at a block boundary
    return sum_tree(x, half) + sum_tree(x + half, n - half);
}

template <typename T>
static void sum_rows_loop(T* out, const T* x, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) store(&out[r], sum_tree(x + r * cols, cols));
}

void sum_rows_cpu(DType dtype, void* out, const void* x, int64_t rows, int64_t cols) {
    switch (dtype) {
        case DType::f32: return sum_rows_loop((float*)out, (const float*)x, rows, cols);
        case DType::f64: return sum_rows_loop((double*)out, (const double*)x, rows, cols);
        case DType::f16: return sum_rows_loop((half_t*)out, (const half_t*)x, rows, cols);
        case DType::bf16: return sum_rows_loop((bf16_t*)out, (const bf16_t*)x, rows, cols);
    }
}
