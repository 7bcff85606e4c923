// matmul.cu: C = A @ B on the GPU, for A (M x K), B (K x N), C (M x N), row-major: C[i][j] = sum_k A[i][k] B[k][j].
//
// Napkin math. A matmul does 2MNK flops on MK + KN + MN elements: at M = N = K = 4096, 137 GFLOP on 200 MB of
// float. An H200 does ~60 TFLOP/s of float32 FMA (~1000 TFLOP/s of bf16 on tensor cores) and reads ~4 TB/s:
// the flops take ~2 ms, reading each element once ~0.05 ms. So a matmul can be compute-bound, but only if each
// element, once loaded, is used many times: the naive kernel reads 2K elements for each output's 2K flops
// (1 flop per 4 bytes, 0.25 flop/byte): were every operand read from DRAM, ~1 TFLOP/s at best (the caches
// catch some of the reuse, by luck rather than by design). Every version below raises the flops done per byte
// moved, first from DRAM (tiles in shared memory), then from shared memory (registers).
//
// Versions, simplest first (ops.matmul(a, b, version=...) runs one; ops.matmul(a, b) runs "fast"):
//   1. matmul_naive_kernel      one thread per output; threadIdx.x runs over rows, so the 32 threads of a warp
//                               read A 32 rows (K elements) apart and write C N apart: 32 memory transactions
//                               where one would do (uncoalesced).
//   2. matmul_coalesced_kernel  the same, with threadIdx.x over columns: a warp reads one element of A (the same
//                               for all 32: a broadcast) and 32 consecutive ones of B and C. Same flops, fewer
//                               transactions.
//   3. matmul_smem_kernel       32 x 32 tiles of A and B loaded into shared memory by the block's 1024 threads,
//                               then used from there: each element loaded from DRAM is used 32 times (a T x T
//                               tile reuses each loaded element T times): 8 flop/byte from DRAM.
//   4. matmul_reg1d_kernel      64 x 64 tiles of C, each thread 8 outputs of one column: one value of B from
//                               shared memory serves 8 FMAs (kept in a register), so shared-memory traffic falls
//                               from 2 loads per FMA to (1 + 8) / 8.
//   5. matmul_reg2d_kernel      128 x 128 tiles of C, each thread an 8 x 8 tile: per step 8 values of A and 8 of B
//                               from shared memory make 64 FMAs (outer product in registers): 0.25 loads per FMA.
//   6. matmul_vec_kernel        5 with 16-byte loads (float4) from DRAM and shared memory, and the A tile stored
//                               transposed in shared memory, so that a thread's 8 values of A are consecutive
//                               (two float4 loads instead of 8 scalar ones).
//  13. matmul_warptile_kernel   6 with the tile split into warp tiles, each lane 4 x 4 pieces of its warp's, so
//                               that a warp's shared-memory reads hit every bank once (6 replays half of them).
//  14. the same, pipelined      two shared-memory stages: the next step's loads fly while this step multiplies;
//                               one barrier per step. What ops.matmul runs for float32. (13-14 are numbered after
//                               the tensor-core versions below, which the kit had first.)
//   7. matmul_wmma_kernel       float16 / bfloat16 on tensor cores (nvcuda::wmma): each warp multiplies 16 x 16 x 16
//                               fragments in one instruction, accumulating in float. Tiles are padded with zeros
//                               in shared memory, so any M, N, K works; loaded 8 elements (16 bytes) at a time
//                               where K and N are multiples of 8. What ops.matmul runs for 16-bit types on an
//                               Ampere GPU; on a Hopper GPU it runs versions 8-12, in matmul_hopper.cu.
//  15. split-K                  for a long K under a small output (512 x 8192 x 512: 8 tiles of 128 x 256 for 132
//                               SMs): K cut into ranges, a block per tile and range (float32: 14's kernel with
//                               kSplit; 16 bits: matmul_hopper.cu's), each range's partial product in float, then
//                               matmul_sum_splits_kernel adds them in a fixed order. What ops.matmul runs where the
//                               output's tiles would leave SMs idle and K is long enough to cut (matmul_splits).
// float64 runs version 3 (ops.matmul's "fast" for double: GPUs have few float64 units, and the lesson is about
// float32 and 16-bit). Every version handles any M, N, K: loads past an edge read 0, stores past it are skipped.
// Grids run blockIdx.x over column tiles (up to 2^31 - 1) and blockIdx.y over row tiles (up to 65535; a taller C
// is launched in chunks of rows, matmul_cuda at the end).
#include <mma.h>

#include <algorithm>  // std::min
#include <cstdlib>

#include <type_traits>

#include "cuda_half_types.cuh"
#include "matmul.h"

// What a product of T is accumulated in: float for float and the 16-bit types, double for double.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// ----------------------------------------------------------------------------------------------
// 1-2. One thread per output, K multiply-adds each, all operands from DRAM (or whatever the caches keep).

constexpr int kSimple = 32;  // versions 1-3: 32 x 32 = 1024 threads per block, one output each

// 1. threadIdx.x over rows: neighbouring threads of a warp read A[row][k] K elements apart.
__global__ void matmul_naive_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    const int64_t row = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
    const int64_t col = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k++) acc += a[row * K + k] * b[k * N + col];
    c[row * N + col] = acc;
}

// 2. threadIdx.x over columns: a warp reads one A[row][k] and 32 consecutive B[k][col].
__global__ void matmul_coalesced_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    const int64_t row = int64_t(blockIdx.y) * blockDim.y + threadIdx.y;
    const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k++) acc += a[row * K + k] * b[k * N + col];
    c[row * N + col] = acc;
}

// ----------------------------------------------------------------------------------------------
// 3. Shared-memory tiles. Each step the block loads a 32 x 32 tile of A and one of B (one element per thread,
// coalesced), then each thread does 32 multiply-adds from shared memory. For every dtype: float64 runs it.
// No bank conflicts: a warp reads one As element (a broadcast) and 32 consecutive Bs elements.
template <typename T>
__global__ void matmul_smem_kernel(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K) {
    using A = acc_t<T>;
    __shared__ A As[kSimple][kSimple], Bs[kSimple][kSimple];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t row = int64_t(blockIdx.y) * kSimple + ty, col = int64_t(blockIdx.x) * kSimple + tx;
    A acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += kSimple) {
        As[ty][tx] = row < M && k0 + tx < K ? ld(a[row * K + k0 + tx]) : A(0);
        Bs[ty][tx] = k0 + ty < K && col < N ? ld(b[(k0 + ty) * N + col]) : A(0);
        // Both barriers are needed, and every thread reaches them (threads past the edge load zeros instead of
        // leaving early). The first: no thread reads the tile before all 1024 have written their element. The
        // second: no thread overwrites the tile with the next step's values while a slower one still reads it.
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kSimple; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) st(&c[row * N + col], acc);
}

// ----------------------------------------------------------------------------------------------
// 4. 1-D register blocking: a block computes a 64 x 64 tile of C with 512 threads; thread t the 8 outputs
// (rows 8 * (t / 64) ... + 7, column t % 64). Per step (8 values of k) the block loads a 64 x 8 tile of A and
// an 8 x 64 tile of B, one element each. Each B value read from shared memory is used 8 times from a register.

constexpr int kR1M = 64, kR1N = 64, kR1K = 8, kR1T = 8;   // tile rows, columns, depth; outputs per thread
constexpr int kR1Threads = kR1M * kR1N / kR1T;           // 512
static_assert(kR1Threads == kR1M * kR1K && kR1Threads == kR1K * kR1N, "one element of each tile per thread");

__global__ void matmul_reg1d_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    __shared__ float As[kR1M][kR1K], Bs[kR1K][kR1N];
    const int t = threadIdx.x, tcol = t % kR1N, trow = t / kR1N;
    const int64_t row0 = int64_t(blockIdx.y) * kR1M, col0 = int64_t(blockIdx.x) * kR1N;
    const int ar = t / kR1K, ac = t % kR1K;  // this thread's element of the A tile
    const int br = t / kR1N, bc = t % kR1N;  // and of the B tile
    float acc[kR1T] = {};
    for (int64_t k0 = 0; k0 < K; k0 += kR1K) {
        As[ar][ac] = row0 + ar < M && k0 + ac < K ? a[(row0 + ar) * K + k0 + ac] : 0.0f;
        Bs[br][bc] = k0 + br < K && col0 + bc < N ? b[(k0 + br) * N + col0 + bc] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kR1K; k++) {
            const float bv = Bs[k][tcol];
#pragma unroll
            for (int i = 0; i < kR1T; i++) acc[i] += As[trow * kR1T + i][k] * bv;
        }
        __syncthreads();
    }
    const int64_t col = col0 + tcol;
    for (int i = 0; i < kR1T; i++) {
        const int64_t row = row0 + trow * kR1T + i;
        if (row < M && col < N) c[row * N + col] = acc[i];
    }
}

// ----------------------------------------------------------------------------------------------
// 5-6. 2-D register blocking: a block computes a 128 x 128 tile of C with 256 threads, each an 8 x 8 tile of it
// (64 accumulators in registers). Per step the block loads a 128 x 8 tile of A and an 8 x 128 tile of B
// (4 elements of each per thread); per k each thread reads 8 values of A and 8 of B from shared memory into
// registers and does their 64 products. From DRAM: 2 * 128 * 128 * 8 flops per (128 + 128) * 8 floats loaded,
// 32 flop/byte, past the ~15 flop/byte where an H200 turns from memory- to compute-bound.

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kR2Threads = (kBM / kTM) * (kBN / kTN);  // 256
static_assert(kBM * kBK % kR2Threads == 0 && kBK * kBN % kR2Threads == 0, "the tiles split evenly over threads");

// 5. Scalar loads; As[row][k] as in A.
__global__ void matmul_reg2d_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    __shared__ float As[kBM][kBK], Bs[kBK][kBN];
    const int t = threadIdx.x, trow = t / (kBN / kTN), tcol = t % (kBN / kTN);
    const int64_t row0 = int64_t(blockIdx.y) * kBM, col0 = int64_t(blockIdx.x) * kBN;
    float acc[kTM][kTN] = {}, am[kTM], bn[kTN];
    for (int64_t k0 = 0; k0 < K; k0 += kBK) {
        for (int i = t; i < kBM * kBK; i += kR2Threads) {
            const int r = i / kBK, k = i % kBK;
            As[r][k] = row0 + r < M && k0 + k < K ? a[(row0 + r) * K + k0 + k] : 0.0f;
        }
        for (int i = t; i < kBK * kBN; i += kR2Threads) {
            const int k = i / kBN, col = i % kBN;
            Bs[k][col] = k0 + k < K && col0 + col < N ? b[(k0 + k) * N + col0 + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kBK; k++) {
#pragma unroll
            for (int i = 0; i < kTM; i++) am[i] = As[trow * kTM + i][k];
#pragma unroll
            for (int j = 0; j < kTN; j++) bn[j] = Bs[k][tcol * kTN + j];
#pragma unroll
            for (int i = 0; i < kTM; i++)
#pragma unroll
                for (int j = 0; j < kTN; j++) acc[i][j] += am[i] * bn[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < kTM; i++) {
        const int64_t row = row0 + trow * kTM + i;
        for (int j = 0; j < kTN; j++) {
            const int64_t col = col0 + tcol * kTN + j;
            if (row < M && col < N) c[row * N + col] = acc[i][j];
        }
    }
}

// p[0..3], zero past `end` (the row's length). kVec: a whole float4 (16-byte aligned, and the row length a
// multiple of 4, so a pack is all in or all out); else 4 scalar loads, each guarded.
template <bool kVec>
__device__ __forceinline__ float4 load4(const float* p, int64_t at, int64_t end) {
    if constexpr (kVec) {
        return at < end ? *reinterpret_cast<const float4*>(p) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
        return make_float4(at < end ? p[0] : 0.0f, at + 1 < end ? p[1] : 0.0f, at + 2 < end ? p[2] : 0.0f,
                           at + 3 < end ? p[3] : 0.0f);
    }
}

// v[0..3] to p[0..3], the columns at and past `end` (the row's length) left alone; load4's twin. kVec: one float4
// store (16-byte aligned, the row length a multiple of 4, so a pack is all in or all out); else 4 guarded scalars.
template <bool kVec>
__device__ __forceinline__ void store4(float* p, const float* v, int64_t at, int64_t end) {
    if constexpr (kVec) {
        if (at < end) *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        for (int u = 0; u < 4; u++)
            if (at + u < end) p[u] = v[u];
    }
}

// Version 6's multiply-adds for kSteps values of k from tiles in shared memory (As[k][row], transposed, and
// Bs[k][col]): per k, two float4 reads of the thread's 8 values of A and two of its 8 of B into registers,
// then their 64 products.
template <int kSteps>
__device__ __forceinline__ void vec_multiply_tiles(const float (*As)[kBM], const float (*Bs)[kBN], int trow, int tcol,
                                                   float (&acc)[kTM][kTN]) {
    float am[kTM], bn[kTN];
#pragma unroll
    for (int k = 0; k < kSteps; k++) {
#pragma unroll
        for (int i = 0; i < kTM; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(&As[k][trow * kTM + i]);
            am[i] = v.x, am[i + 1] = v.y, am[i + 2] = v.z, am[i + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < kTN; j += 4) {
            const float4 v = *reinterpret_cast<const float4*>(&Bs[k][tcol * kTN + j]);
            bn[j] = v.x, bn[j + 1] = v.y, bn[j + 2] = v.z, bn[j + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < kTM; i++)
#pragma unroll
            for (int j = 0; j < kTN; j++) acc[i][j] += am[i] * bn[j];
    }
}

// Version 6's store of the thread's 8 x 8 outputs, rows from row0 and columns from col0, 4 at a time (store4).
template <bool kVec>
__device__ __forceinline__ void vec_store_outputs(float* c, const float (&acc)[kTM][kTN], int64_t row0, int64_t col0,
                                                  int64_t M, int64_t N) {
    for (int i = 0; i < kTM; i++) {
        const int64_t row = row0 + i;
        if (row >= M) break;
        for (int j = 0; j < kTN; j += 4) store4<kVec>(c + row * N + col0 + j, &acc[i][j], col0 + j, N);
    }
}

// 6. 5 with float4 loads: each thread loads one float4 of the A tile (128 rows x 2 packs) and one of the B tile
// (8 rows x 32 packs) per step. A's pack is stored transposed, As[k][row], so a thread's 8 values of A for one k
// are consecutive: two float4 reads from shared memory, like B's. (The transposed store hits each bank twice
// per warp, a 2-way conflict, once per step; the reads it saves happen 8 times per step.)
// kVec needs K and N multiples of 4 and 16-byte aligned A, B and C; else the same kernel loads 4 floats one by one.
template <bool kVec>
__global__ void matmul_vec_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    static_assert(kBM * kBK / 4 == kR2Threads && kBK * kBN / 4 == kR2Threads, "one float4 of each tile per thread");
    __shared__ __align__(16) float As[kBK][kBM];
    __shared__ __align__(16) float Bs[kBK][kBN];
    const int t = threadIdx.x, trow = t / (kBN / kTN), tcol = t % (kBN / kTN);
    const int64_t row0 = int64_t(blockIdx.y) * kBM, col0 = int64_t(blockIdx.x) * kBN;
    const int ar = t / (kBK / 4), ak = (t % (kBK / 4)) * 4;  // A tile: row ar, k ak ... ak + 3
    const int bk = t / (kBN / 4), bc = (t % (kBN / 4)) * 4;  // B tile: row bk, columns bc ... bc + 3
    float acc[kTM][kTN] = {};
    for (int64_t k0 = 0; k0 < K; k0 += kBK) {
        const float4 av = row0 + ar < M ? load4<kVec>(a + (row0 + ar) * K + k0 + ak, k0 + ak, K)
                                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        As[ak + 0][ar] = av.x;
        As[ak + 1][ar] = av.y;
        As[ak + 2][ar] = av.z;
        As[ak + 3][ar] = av.w;
        const float4 bv = k0 + bk < K ? load4<kVec>(b + (k0 + bk) * N + col0 + bc, col0 + bc, N)
                                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        *reinterpret_cast<float4*>(&Bs[bk][bc]) = bv;
        __syncthreads();
        vec_multiply_tiles<kBK>(As, Bs, trow, tcol, acc);
        __syncthreads();
    }
    vec_store_outputs<kVec>(c, acc, row0 + trow * kTM, col0 + tcol * kTN, M, N);
}

// ----------------------------------------------------------------------------------------------
// 13-14. Warp tiling, then a two-stage pipeline (numbered after the tensor-core versions, which came first in
// the kit; in the float32 ladder they come after 6). Version 6 leaves two things on the table:
//  - Bank conflicts. Its thread (trow, tcol) reads B's 8 values at Bs[k][8 tcol ...]: the 16 threads of a half
//    warp read float4s 32 bytes apart, so a quarter warp (8 threads, one 128-byte wavefront of float4s) spans
//    256 bytes and each wavefront is replayed: 2-way conflicts on every B read.
//  - Stalls. A step's loads from DRAM (~1 us of latency) start only after the previous step's multiply-adds, and
//    two barriers per step leave the SM idle while the slowest warp catches up.
// 13. matmul_warptile_kernel<..., kPipelined = false>: the block's tile is split into warp tiles (a warp owns a
//     64 x 32 or 64 x 64 part of C), and within a warp tile each lane computes 4 x 4 outputs of every 32 x 16
//     sub-tile (lanes 8 x 4): per k a lane reads 4 consecutive values of A and 4 of B per sub-tile, and the 8 lanes
//     that read A read 128 consecutive bytes (one wavefront, no conflict), the 4 that read B 64 bytes. Same 8 x 8
//     (or 8 x 16) outputs per thread as version 6, in four (eight) 4 x 4 pieces.
// 14. matmul_warptile_kernel<..., kPipelined = true>: two shared-memory stages. While the warps multiply the tiles
//     of step s from one stage, each thread's loads for step s + 1 are already in flight into registers; after the
//     multiply-adds it writes them into the other stage. One barrier per step: the stage written in step s was last
//     read in step s - 1, before that step's barrier. What ops.matmul runs for float32.
// Napkin math at 128 x 128 x 8, 256 threads: per step a thread does 8 x 64 = 512 FMAs and 16 float4 reads of shared
// memory (0.03 reads per FMA) and loads 2 float4s from DRAM or L2 (2 x 128 x 8 x 4 bytes per block for 2 x 128^2 x 8
// flops: 32 flop/byte). 64 accumulators + 16 operands + 8 prefetched values + addresses fit 128 registers, so two
// blocks share an SM (16 warps to hide latency).

// A tile shape for versions 13-14: the block computes kBM x kBN of C with kWarpsM x kWarpsN warps, kBK values of k per
// step. Each warp's tile is made of kIterM x kIterN sub-tiles of 32 x 16, each lane 4 x 4 of every sub-tile.
template <int kBM_, int kBN_, int kBK_, int kWarpsM, int kWarpsN, int kBlocksPerSM = 0>
struct WarpTile {
    static constexpr int kBM = kBM_, kBN = kBN_, kBK = kBK_;
    static constexpr int kThreads = kWarpsM * kWarpsN * 32;
    static constexpr int kLanesM = 8, kLanesN = 4, kSubM = kLanesM * 4, kSubN = kLanesN * 4;  // 32 x 16 sub-tile
    static constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;                           // a warp's tile
    static constexpr int kIterM = kWM / kSubM, kIterN = kWN / kSubN;
    static constexpr int kWarpsAcross = kWarpsN;
    // As is stored transposed, As[k][row], its rows kBM + 4 floats long: a warp's transposed store (16 rows, two
    // groups of 4 k) then puts the two groups 16 banks apart instead of on the same banks
    static constexpr int kPadA = 4;
    static constexpr int kLoadsA = kBM * kBK / 4 / kThreads, kLoadsB = kBK * kBN / 4 / kThreads;  // float4s/thread
    // __launch_bounds__'s blocks per SM: by default two where a thread has 64 outputs (registers capped at 128:
    // 65536 / (2 x 256)), else one
    static constexpr int kMinBlocks = kBlocksPerSM ? kBlocksPerSM : kIterM * kIterN * 16 <= 64 ? 2 : 1;
    static_assert(kWM % kSubM == 0 && kWN % kSubN == 0, "a warp's tile is whole sub-tiles");
    static_assert(kLoadsA * kThreads * 4 == kBM * kBK && kLoadsB * kThreads * 4 == kBK * kBN, "even loads");
};
// The shapes the versions run: 13 the first (as 6: 128 x 128, 256 threads, 64 outputs each); 14 the one that
// measured fastest on the H200 (kWarpTileFast, below).
using WarpTile128 = WarpTile<128, 128, 8, 2, 4>;       // warp tile 64 x 32: 2 x 2 sub-tiles
using WarpTile128x256 = WarpTile<128, 256, 8, 2, 4>;   // warp tile 64 x 64: 2 x 4 sub-tiles, 128 outputs per thread
using WarpTile256x128 = WarpTile<256, 128, 8, 4, 2>;   // the same warp tile, the block taller than wide
using WarpTile128k16 = WarpTile<128, 128, 16, 2, 4>;   // 128 x 128 with 16 values of k per step: half the barriers
using WarpTile128t128 = WarpTile<128, 128, 8, 2, 2>;   // 4 warps of 64 x 64: 128 outputs per thread
using WarpTile128one = WarpTile<128, 128, 8, 2, 4, 1>; // 128 x 128, registers uncapped: one block (8 warps) per SM

// kSplit (split-K, version 15): blockIdx.z is one of gridDim.z ranges of k, each k_split deep (a multiple of kBK), and
// c then holds gridDim.z partial products of M x N, one per range. A template argument, not k_split = K, so that
// versions 13-14 compile as they did without it: with the range's bounds in registers for every launch, version 14
// ran 4096^3 at 0.807 of torch.matmul on an H200 against 0.844 (2026-12-04, make bench).
template <typename W, bool kVec, bool kPipelined, bool kSplit = false>
__global__ void __launch_bounds__(W::kThreads, W::kMinBlocks)
    matmul_warptile_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int64_t k_split) {
    constexpr int kStages = kPipelined ? 2 : 1;
    __shared__ __align__(16) float As[kStages][W::kBK][W::kBM + W::kPadA];
    __shared__ __align__(16) float Bs[kStages][W::kBK][W::kBN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wrow = (warp / W::kWarpsAcross) * W::kWM, wcol = (warp % W::kWarpsAcross) * W::kWN;
    const int lrow = (lane / W::kLanesN) * 4, lcol = (lane % W::kLanesN) * 4;
    const int64_t row0 = int64_t(blockIdx.y) * W::kBM, col0 = int64_t(blockIdx.x) * W::kBN;
    // this block's range of k: loads stop at its end as they would at K's (A's rows are still K apart)
    const int64_t k_begin = kSplit ? int64_t(blockIdx.z) * k_split : 0;
    const int64_t k_end = kSplit ? min(K, k_begin + k_split) : K;
    if constexpr (kSplit) c += int64_t(blockIdx.z) * M * N;
    float acc[W::kIterM * 4][W::kIterN * 4] = {};
    float4 av[W::kLoadsA], bv[W::kLoadsB];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // this thread's float4s of the step starting at k0, from DRAM (or L2) into registers
    auto load = [&](int64_t k0) {
#pragma unroll
        for (int q = 0; q < W::kLoadsA; q++) {
            const int i = t + q * W::kThreads, r = i / (W::kBK / 4), k = (i % (W::kBK / 4)) * 4;
            av[q] = row0 + r < M ? load4<kVec>(a + (row0 + r) * K + k0 + k, k0 + k, k_end) : zero;
        }
#pragma unroll
        for (int q = 0; q < W::kLoadsB; q++) {
            const int i = t + q * W::kThreads, k = i / (W::kBN / 4), col = (i % (W::kBN / 4)) * 4;
            bv[q] = k0 + k < k_end ? load4<kVec>(b + (k0 + k) * N + col0 + col, col0 + col, N) : zero;
        }
    };
    // ... and from registers into shared-memory stage s, A transposed
    auto store = [&](int s) {
#pragma unroll
        for (int q = 0; q < W::kLoadsA; q++) {
            const int i = t + q * W::kThreads, r = i / (W::kBK / 4), k = (i % (W::kBK / 4)) * 4;
            As[s][k + 0][r] = av[q].x;
            As[s][k + 1][r] = av[q].y;
            As[s][k + 2][r] = av[q].z;
            As[s][k + 3][r] = av[q].w;
        }
#pragma unroll
        for (int q = 0; q < W::kLoadsB; q++) {
            const int i = t + q * W::kThreads, k = i / (W::kBN / 4), col = (i % (W::kBN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[s][k][col]) = bv[q];
        }
    };
    // the multiply-adds of one step from stage s: per k, kIterM float4s of A and kIterN of B, their outer product
    auto multiply = [&](int s) {
#pragma unroll
        for (int k = 0; k < W::kBK; k++) {
            float am[W::kIterM * 4], bn[W::kIterN * 4];
#pragma unroll
            for (int i = 0; i < W::kIterM; i++) {
                const float4 v = *reinterpret_cast<const float4*>(&As[s][k][wrow + i * W::kSubM + lrow]);
                am[4 * i] = v.x, am[4 * i + 1] = v.y, am[4 * i + 2] = v.z, am[4 * i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < W::kIterN; j++) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][wcol + j * W::kSubN + lcol]);
                bn[4 * j] = v.x, bn[4 * j + 1] = v.y, bn[4 * j + 2] = v.z, bn[4 * j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < W::kIterM * 4; i++)
#pragma unroll
                for (int j = 0; j < W::kIterN * 4; j++) acc[i][j] += am[i] * bn[j];
        }
    };

    if constexpr (kPipelined) {
        load(k_begin);
        store(0);
        __syncthreads();
        int s = 0;
        for (int64_t k0 = k_begin; k0 < k_end; k0 += W::kBK, s ^= 1) {
            const bool more = k0 + W::kBK < k_end;
            if (more) load(k0 + W::kBK);  // in flight during this step's multiply-adds
            multiply(s);
            if (more) store(s ^ 1);  // stage s ^ 1 was last read in the previous step, before its barrier
            __syncthreads();
        }
    } else {
        for (int64_t k0 = k_begin; k0 < k_end; k0 += W::kBK) {
            load(k0);
            store(0);
            __syncthreads();
            multiply(0);
            __syncthreads();
        }
    }

    // each lane's 4 x 4 pieces: rows wrow + i * 32 + lrow + r, columns wcol + j * 16 + lcol ... + 3
#pragma unroll
    for (int i = 0; i < W::kIterM * 4; i++) {
        const int64_t row = row0 + wrow + (i / 4) * W::kSubM + lrow + i % 4;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < W::kIterN; j++) {
            const int64_t col = col0 + wcol + j * W::kSubN + lcol;
            store4<kVec>(c + row * N + col, &acc[i][4 * j], col, N);
        }
    }
}

// ----------------------------------------------------------------------------------------------
// 7. Tensor cores. A block of 4 warps computes a 64 x 64 tile of C, each warp a 32 x 32 quarter as 2 x 2
// fragments of 16 x 16 (float accumulators). Per step the block loads a 64 x 32 tile of A and a 32 x 64 tile of
// B into shared memory (zeros past the edges, so the fragments never read outside the matrices) and each warp
// does 2 (k) x 2 x 2 mma_sync calls, each a 16 x 16 x 16 multiply-add (8192 flops) on the tensor cores. The
// result goes through shared memory (a fragment's layout across lanes is unspecified) to be rounded and stored
// with guards.
// Loading the tiles: 4096 elements of 2 bytes per step, for 64 x 64 x 32 x 2 = 262 KFLOP of mma. One element
// per load is 32 loads (and 32 shared-memory stores) per thread per step; with 16-byte loads (kVec: K and N multiples of 8, A and B 16-byte aligned,
// so a pack of 8 is all inside a row or all past its end) it is 4, as version 6 does for float.
// Rows of the tiles are padded by 16 bytes: WMMA loads need a leading dimension that is a multiple of 16 bytes,
// and the padding shifts consecutive rows onto different banks.

namespace wmma = nvcuda::wmma;
constexpr int kWM = 64, kWN = 64, kWK = 32, kWF = 16;  // block tile rows, columns, depth; fragment size
constexpr int kWThreads = 128;  // 4 warps, 2 x 2, each 32 x 32 of C
constexpr int kPad16 = 8, kPad32 = 4;  // 16 bytes of 16-bit elements, of floats

bool matmul_wmma_supported(int device) {
    const int major =
        per_device(device, [device] { return device_attribute(cudaDevAttrComputeCapabilityMajor, device, -1); });
    return major >= 8;
}

template <typename T, bool kVec>
__global__ void matmul_wmma_kernel(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap();  // bfloat16 WMMA needs sm_80; the binding refuses older GPUs (matmul_wmma_supported)
#else
    // __align__(32): load_matrix_sync and store_matrix_sync need 256-bit aligned pointers; every fragment's offset
    // (16 rows of 40 or 72 elements, or 16 columns) is a multiple of 32 bytes.
    __shared__ __align__(32) T As[kWM][kWK + kPad16];
    __shared__ __align__(32) T Bs[kWK][kWN + kPad16];
    __shared__ __align__(32) float Cs[kWM][kWN + kPad32];
    const int t = threadIdx.x, warp = t / 32, wr = (warp / 2) * 32, wc = (warp % 2) * 32;
    const int64_t row0 = int64_t(blockIdx.y) * kWM, col0 = int64_t(blockIdx.x) * kWN;
    wmma::fragment<wmma::accumulator, kWF, kWF, kWF, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int64_t k0 = 0; k0 < K; k0 += kWK) {
        if constexpr (kVec) {  // packs of 8 (a uint4); its zero bits are 0.0 in both 16-bit types
            for (int p = t; p < kWM * kWK / 8; p += kWThreads) {
                const int r = p / (kWK / 8), k = (p % (kWK / 8)) * 8;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (row0 + r < M && k0 + k < K) v = *reinterpret_cast<const uint4*>(a + (row0 + r) * K + k0 + k);
                *reinterpret_cast<uint4*>(&As[r][k]) = v;  // row r starts r * 80 bytes in: 16-byte aligned
            }
            for (int p = t; p < kWK * kWN / 8; p += kWThreads) {
                const int k = p / (kWN / 8), col = (p % (kWN / 8)) * 8;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (k0 + k < K && col0 + col < N) v = *reinterpret_cast<const uint4*>(b + (k0 + k) * N + col0 + col);
                *reinterpret_cast<uint4*>(&Bs[k][col]) = v;  // rows of 144 bytes
            }
        } else {
            for (int i = t; i < kWM * kWK; i += kWThreads) {
                const int r = i / kWK, k = i % kWK;
                if (row0 + r < M && k0 + k < K) As[r][k] = a[(row0 + r) * K + k0 + k];
                else st(&As[r][k], 0.0f);
            }
            for (int i = t; i < kWK * kWN; i += kWThreads) {
                const int k = i / kWN, col = i % kWN;
                if (k0 + k < K && col0 + col < N) Bs[k][col] = b[(k0 + k) * N + col0 + col];
                else st(&Bs[k][col], 0.0f);
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kWK; k += kWF) {
            wmma::fragment<wmma::matrix_a, kWF, kWF, kWF, T, wmma::row_major> af[2];
            wmma::fragment<wmma::matrix_b, kWF, kWF, kWF, T, wmma::row_major> bf[2];
#pragma unroll
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(af[i], &As[wr + i * kWF][k], kWK + kPad16);
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(bf[j], &Bs[k][wc + j * kWF], kWN + kPad16);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&Cs[wr + i * kWF][wc + j * kWF], acc[i][j], kWN + kPad32, wmma::mem_row_major);
    __syncthreads();  // every warp's quarter in Cs before threads store elements other warps computed
    for (int i = t; i < kWM * kWN; i += kWThreads) {
        const int r = i / kWN, col = i % kWN;
        if (row0 + r < M && col0 + col < N) st(&c[(row0 + r) * N + col0 + col], Cs[r][col]);
    }
#endif
}

// ----------------------------------------------------------------------------------------------
// 15. Split-K's second launch: C = the sum of the partial products (splits x count floats, count = M x N), added in
// the order 0, 1, ..., splits - 1 whatever order the blocks of the first launch ran in, so the same inputs give the
// same bits every time (float addition is not associative: (x + y) + z and x + (y + z) can differ in the last bit,
// and an order set by which block finishes first, as atomicAdd's, would change from run to run); rounded once to T.
// kVec: four elements per thread, 16-byte loads (count a multiple of 4). It moves splits x 4 bytes in and 2 or 4 out
// per element: at 512 x 512 with 16 splits 16 MB, most of it still in L2 (50 MB on an H200) from the first launch.
template <typename T, bool kVec>
__global__ void matmul_sum_splits_kernel(T* c, const float* parts, int64_t count, int splits) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if constexpr (kVec) {
        const float4* part = reinterpret_cast<const float4*>(parts);
        for (int64_t q = first; q < count / 4; q += stride) {
            float4 acc = part[q];
            for (int s = 1; s < splits; s++) {
                const float4 v = part[s * (count / 4) + q];
                acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
            }
            st(&c[4 * q], acc.x), st(&c[4 * q + 1], acc.y), st(&c[4 * q + 2], acc.z), st(&c[4 * q + 3], acc.w);
        }
    } else {
        for (int64_t i = first; i < count; i += stride) {
            float acc = parts[i];
            for (int s = 1; s < splits; s++) acc += parts[s * count + i];
            st(&c[i], acc);
        }
    }
}

template <typename T>
static cudaError_t launch_sum_splits(T* c, const float* parts, int64_t count, int splits, cudaStream_t s) {
    const bool vec = count % 4 == 0;
    const int64_t blocks = std::min<int64_t>(cdiv(vec ? count / 4 : count, 256), 4096);
    if (vec) matmul_sum_splits_kernel<T, true><<<unsigned(blocks), 256, 0, s>>>(c, parts, count, splits);
    else matmul_sum_splits_kernel<T, false><<<unsigned(blocks), 256, 0, s>>>(c, parts, count, splits);
    return cudaGetLastError();
}

// ----------------------------------------------------------------------------------------------
// Launchers: the grid is the output's tiles, computed from M and N (blockIdx.x over columns); every launch is
// checked.

template <typename T>
static cudaError_t launch_smem(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, cudaStream_t s) {
    const dim3 grid(cdiv(N, kSimple), cdiv(M, kSimple)), block(kSimple, kSimple);
    matmul_smem_kernel<T><<<grid, block, 0, s>>>(c, a, b, M, N, K);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_wmma(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, cudaStream_t s) {
    const dim3 grid(cdiv(N, kWN), cdiv(M, kWM));
    if (K % 8 == 0 && N % 8 == 0 && aligned16(a) && aligned16(b))
        matmul_wmma_kernel<T, true><<<grid, kWThreads, 0, s>>>(c, a, b, M, N, K);
    else matmul_wmma_kernel<T, false><<<grid, kWThreads, 0, s>>>(c, a, b, M, N, K);
    return cudaGetLastError();
}

// Versions 13-14 with tile shape W: float4 loads where K and N are multiples of 4 and A, B, C 16-byte aligned (with
// `splits` partial products in c, each of them: M x N a multiple of 4 too). Split-K: `splits` ranges of k, the same
// depth each, a multiple of the kernel's step, so that each range but the last is whole steps.
template <typename W, bool kPipelined>
static cudaError_t launch_warptile(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                   cudaStream_t s, int splits = 1) {
    const dim3 grid(cdiv(N, W::kBN), cdiv(M, W::kBM), unsigned(splits));
    const bool vec = K % 4 == 0 && N % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
    if constexpr (kPipelined) {  // split-K runs version 14's kernel only
        if (splits > 1) {
            const int64_t k_split = cdiv(cdiv(K, splits), W::kBK) * W::kBK;
            if (vec && M * N % 4 == 0)
                matmul_warptile_kernel<W, true, true, true><<<grid, W::kThreads, 0, s>>>(c, a, b, M, N, K, k_split);
            else matmul_warptile_kernel<W, false, true, true><<<grid, W::kThreads, 0, s>>>(c, a, b, M, N, K, k_split);
            return cudaGetLastError();
        }
    }
    if (vec) {
        matmul_warptile_kernel<W, true, kPipelined><<<grid, W::kThreads, 0, s>>>(c, a, b, M, N, K, K);
    } else {
        matmul_warptile_kernel<W, false, kPipelined><<<grid, W::kThreads, 0, s>>>(c, a, b, M, N, K, K);
    }
    return cudaGetLastError();
}

// Version 14's tile shape: the fastest of the shapes above on the H200 (scripts/experiment_matmul_variants.py times
// them all; a build with LABKIT_MATMUL_SWEEP runs the one that $LABKIT_MATMUL_SWEEP_SHAPE names, 0-5, for it).
using WarpTileFast = WarpTile128x256;
// Split-K's (15) in float32: version 14's tiles (128 x 128 ones, two blocks per SM, would cut a product into half as
// many ranges, but their pipelined kernel spills 40-52 bytes a thread under the 128-register cap: nvcc 13.0, sm_90a;
// scripts/experiment_matmul_variants.py times the shapes against each other).
using WarpTileSplit = WarpTileFast;

#ifdef LABKIT_MATMUL_SWEEP
// The sweep build's tile shape, for versions 14 and 15 alike: fn(W{}) for the shape $LABKIT_MATMUL_SWEEP_SHAPE names
// (0-5), the launch and split-K's count both asking here
template <typename Fn>
static auto with_sweep_shape(Fn fn) {
    const char* shape = getenv("LABKIT_MATMUL_SWEEP_SHAPE");
    switch (shape ? atoi(shape) : 0) {
        case 1: return fn(WarpTile128x256{});
        case 2: return fn(WarpTile256x128{});
        case 3: return fn(WarpTile128k16{});
        case 4: return fn(WarpTile128t128{});
        case 5: return fn(WarpTile128one{});
        default: return fn(WarpTile128{});
    }
}
#endif

static cudaError_t launch_pipelined(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                    cudaStream_t s, int splits = 1) {
#ifdef LABKIT_MATMUL_SWEEP
    return with_sweep_shape([&](auto w) { return launch_warptile<decltype(w), true>(c, a, b, M, N, K, s, splits); });
#else
    if (splits > 1) return launch_warptile<WarpTileSplit, true>(c, a, b, M, N, K, s, splits);
    return launch_warptile<WarpTileFast, true>(c, a, b, M, N, K, s);
#endif
}

// Split-K in float32: where the tiles of shape W take less than one wave (the model knows nothing of the partial
// products of a large C falling out of L2), the rule (matmul.h's matmul_split_rule) for those tiles and the blocks of
// W an SM holds (__launch_bounds__'s), ranges at least 128 deep (16 steps of 8), and a partial product of 2^18 floats
// costing ~4.4 steps of k of a wave. That figure, and the rule's choices, from the H200 (2026-12-04,
// results/2026-12-04-nvidia-h200/matmul-variants-splitk.json, 128 x 256 tiles, M x K x N): 512 x 8192 x 512 834,
// 423, 221, 124 and 139 us with 2, 4, 8, 16 and 32 ranges (the rule: 16), against 1576 us uncut and 99.0 for
// torch.matmul; 1024 x 8192 x 1024 435 us with 4, 443 with 8 (the rule: 4), 1579 uncut, 381 for torch.matmul;
// 1024^3 72.1 us with 4, 118 with 2, 207 uncut (the rule: 4).
template <typename W>
static int f32_splits(int64_t M, int64_t N, int64_t K, int sms) {
    const int64_t tiles = cdiv(M, W::kBM) * cdiv(N, W::kBN), slots = int64_t(sms) * W::kMinBlocks;
    return tiles >= slots ? 1 : matmul_split_rule(tiles, slots, M, N, K, 128, 1.0, 4.4);
}

static int f32_splits(int64_t M, int64_t N, int64_t K, int device) {
    const int sms =
        per_device(device, [device] { return device_attribute(cudaDevAttrMultiProcessorCount, device, 1); });
#ifdef LABKIT_MATMUL_SWEEP
    if (const char* forced = getenv("LABKIT_MATMUL_SWEEP_SPLITS")) return atoi(forced);
    return with_sweep_shape([&](auto w) { return f32_splits<decltype(w)>(M, N, K, sms); });
#else
    return f32_splits<WarpTileSplit>(M, N, K, sms);
#endif
}

static cudaError_t matmul_f32(int version, float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                              cudaStream_t s, int splits) {
    switch (version) {
        case kMatmulNaive: {  // blockIdx.y over row tiles here too; threadIdx.x is the row within one
            matmul_naive_kernel<<<dim3(cdiv(N, kSimple), cdiv(M, kSimple)), dim3(kSimple, kSimple), 0, s>>>(c, a, b, M,
                                                                                                            N, K);
            return cudaGetLastError();
        }
        case kMatmulCoalesced: {
            matmul_coalesced_kernel<<<dim3(cdiv(N, kSimple), cdiv(M, kSimple)), dim3(kSimple, kSimple), 0, s>>>(
                c, a, b, M, N, K);
            return cudaGetLastError();
        }
        case kMatmulSmem: return launch_smem(c, a, b, M, N, K, s);
        case kMatmulReg1d: {
            matmul_reg1d_kernel<<<dim3(cdiv(N, kR1N), cdiv(M, kR1M)), kR1Threads, 0, s>>>(c, a, b, M, N, K);
            return cudaGetLastError();
        }
        case kMatmulReg2d: {
            matmul_reg2d_kernel<<<dim3(cdiv(N, kBN), cdiv(M, kBM)), kR2Threads, 0, s>>>(c, a, b, M, N, K);
            return cudaGetLastError();
        }
        case kMatmulWarptile: return launch_warptile<WarpTile128, false>(c, a, b, M, N, K, s);
        case kMatmulPipelined: return launch_pipelined(c, a, b, M, N, K, s);
        case kMatmulSplitK: return launch_pipelined(c, a, b, M, N, K, s, splits);
        default: {  // kMatmulVec
            const dim3 grid(cdiv(N, kBN), cdiv(M, kBM));
            const bool vec = K % 4 == 0 && N % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
            if (vec) matmul_vec_kernel<true><<<grid, kR2Threads, 0, s>>>(c, a, b, M, N, K);
            else matmul_vec_kernel<false><<<grid, kR2Threads, 0, s>>>(c, a, b, M, N, K);
            return cudaGetLastError();
        }
    }
}

// C = A @ B, or with splits > 1 (split-K) the partial products into parts, C untouched.
static cudaError_t matmul_rows(int version, DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N,
                               int64_t K, int64_t lda, int64_t ldb, int device, cudaStream_t stream, float* parts,
                               int splits) {
    switch (dtype) {
        case DType::f32:
            return matmul_f32(version, splits > 1 ? parts : (float*)c, (const float*)a, (const float*)b, M, N, K,
                              stream, splits);
        case DType::f64: return launch_smem((double*)c, (const double*)a, (const double*)b, M, N, K, stream);
        case DType::f16:
        case DType::bf16:
            if (matmul_reads_by_tma(version, dtype))
                return matmul_hopper(version, dtype, c, a, b, M, N, K, lda, ldb, device, stream,
                                     splits > 1 ? parts : nullptr, splits);
            if (dtype == DType::f16) {
                if (version == kMatmulWmma)
                    return launch_wmma((__half*)c, (const __half*)a, (const __half*)b, M, N, K, stream);
                return launch_smem((__half*)c, (const __half*)a, (const __half*)b, M, N, K, stream);
            }
            if (version == kMatmulWmma)
                return launch_wmma((__nv_bfloat16*)c, (const __nv_bfloat16*)a, (const __nv_bfloat16*)b, M, N, K,
                                   stream);
            return launch_smem((__nv_bfloat16*)c, (const __nv_bfloat16*)a, (const __nv_bfloat16*)b, M, N, K, stream);
    }
    return cudaErrorInvalidValue;
}

// What ops.matmul runs. float32: split-K (15) where the output has too few tiles for the SMs and K is long enough to
// cut (matmul_split_rule), else version 14; float64: 3. 16-bit: on a Hopper GPU built for sm_90a, split-K on the same
// terms, else the warp-specialized wgmma kernel whose tiles fill the SMs best (matmul_hopper_choice); elsewhere WMMA
// (7), or 3 before Ampere.
int matmul_fast_version(DType dtype, int64_t M, int64_t N, int64_t K, int device) {
    if (dtype == DType::f32) return f32_splits(M, N, K, device) > 1 ? kMatmulSplitK : kMatmulPipelined;
    if (dtype == DType::f64) return kMatmulSmem;
    if (matmul_hopper_available(device))
        return matmul_hopper_splits(M, N, K, device) > 1 ? kMatmulSplitK : matmul_hopper_choice(M, N, device);
    return matmul_wmma_supported(device) ? kMatmulWmma : kMatmulSmem;
}

int matmul_splits(int version, DType dtype, int64_t M, int64_t N, int64_t K, int device) {
    if (version != kMatmulSplitK || dtype == DType::f64) return 1;
    return dtype == DType::f32 ? f32_splits(M, N, K, device) : matmul_hopper_splits(M, N, K, device);
}

// gridDim.y, the row tiles, is at most 65535, so a C taller than that many tiles is computed in chunks of
// kRowChunk rows: a multiple of every version's row tile (32, 64, 128), so each chunk starts on a tile boundary
// and its rows keep the 16-byte alignment of the whole (the vector loads' condition). 2,097,024 rows = 65532
// tiles of 32: one chunk for any C of up to 2 M rows, which is every C but a very tall one.
constexpr int64_t kRowChunk = 128 * 16383;

cudaError_t matmul_cuda(int version, DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N,
                        int64_t K, int64_t lda, int64_t ldb, int device, cudaStream_t stream, float* parts,
                        int splits) {
    if (splits > 1) {  // split-K: few tiles (matmul_split_rule), so one grid of rows; the partials, then their sum
        if (!parts || M > kRowChunk) return cudaErrorInvalidValue;
        cudaError_t e = matmul_rows(version, dtype, c, a, b, M, N, K, lda, ldb, device, stream, parts, splits);
        if (e != cudaSuccess) return e;
        switch (dtype) {
            case DType::f32: return launch_sum_splits((float*)c, parts, M * N, splits, stream);
            case DType::f16: return launch_sum_splits((__half*)c, parts, M * N, splits, stream);
            case DType::bf16: return launch_sum_splits((__nv_bfloat16*)c, parts, M * N, splits, stream);
            default: return cudaErrorInvalidValue;
        }
    }
    const int64_t size = dtype == DType::f64 ? 8 : dtype == DType::f32 ? 4 : 2;  // bytes per element
    for (int64_t r0 = 0; r0 < M; r0 += kRowChunk) {
        const int64_t rows = M - r0 < kRowChunk ? M - r0 : kRowChunk;
        const cudaError_t e = matmul_rows(version, dtype, static_cast<char*>(c) + r0 * N * size,
                                          static_cast<const char*>(a) + r0 * lda * size, b, rows, N, K, lda, ldb,
                                          device, stream, nullptr, 1);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
