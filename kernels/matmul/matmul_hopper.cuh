// matmul_hopper.cuh: the pieces of the Hopper matmul kernels (matmul_hopper.cu explains them, and the versions they
// make): TMA, mbarrier and wgmma wrapped one PTX instruction each, the tiles' layout in shared memory, the
// epilogue, the warp-specialized kernel of versions 9-12, and the host side (tensor maps, launches). A header so that
// exercise 11 runs the same kernel with its own ring bookkeeping.
#pragma once
#include <cuda.h>  // CUtensorMap and its enums only: the encode function is reached through the runtime, so no -lcuda
#include <cudaTypedefs.h>

#include <type_traits>

#include "cuda_half_types.cuh"
#include "matmul.h"
#include "matmul_ring.h"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LABKIT_SM90A 1  // this device pass has wgmma and setmaxnreg
#endif

namespace {

constexpr int kBK = 64;  // k per slot: 64 16-bit elements = one 128-byte swizzle row
constexpr int kHM = 128;  // rows of version 8's output tile
constexpr int kStrip = 64;  // columns of B per TMA box (128 bytes)
constexpr int kTileBytesA = kHM * kBK * 2;  // 16 KB: version 8's A tile
constexpr int kStripBytes = kBK * kStrip * 2;  // 8 KB: one 64-column strip of B's tile
constexpr int kWarpgroup = 128;

// ----------------------------------------------------------------------------------------------
// The pieces, each one PTX instruction (or a loop around one).

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void bar_init(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// The producer's arrival, which also tells the barrier how many bytes TMA will write before the phase completes.
__device__ __forceinline__ void bar_expect_bytes(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Wait until the phase of parity `phase` has completed. A new barrier counts as having completed the phase
// before its first (parity 1), so a producer's first pass over empty slots does not wait. kPolls > 0 gives up after
// that many polls and returns false (a graded exercise's kernel, which must end even when its waits are wrong); the
// lesson's kernels wait as long as it takes (kPolls = 0).
template <int64_t kPolls = 0>
__device__ __forceinline__ bool bar_wait(uint64_t* bar, int phase) {
    uint32_t done = 0;
    for (int64_t n = 0; !done; n++) {
        if (kPolls > 0 && n == kPolls) return false;
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(smem_addr(bar)), "r"(phase)
            : "memory");
    }
    return true;
}

// clang-format off: inline PTX and its operand lists, laid out by hand
// TMA: the box of the tensor map at (x, y) (x the contiguous dimension) into shared memory, counted on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(smem_addr(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(bar))
        : "memory");
}

// TMA's store: the box of the tensor map at (x, y) from shared memory, as one of the thread's bulk groups (committed
// by bulk_commit, waited for by bulk_wait_read / bulk_wait); past the map's edges TMA writes nothing.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, const void* src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(src))
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most kPending of this thread's bulk groups still read their shared memory (what may be overwritten).
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
// Until all of this thread's bulk groups have written global memory.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// A wgmma matrix descriptor for a 128-byte-swizzled tile in shared memory: the start address, the "leading" and
// "stride" byte offsets (each >> 4), and the swizzle mode in bits 62-63 (1: 128 bytes). For K-major A the stride
// offset is 1024 (8 rows of 128 bytes) and the leading offset unused; for MN-major B the leading offset steps from
// one 64-column strip to the next and the stride offset over 8 rows of k.
__device__ __forceinline__ uint64_t sw128_desc(const void* p, uint32_t leading, uint32_t stride) {
    return uint64_t((smem_addr(p) & 0x3FFFF) >> 4) | uint64_t((leading & 0x3FFFF) >> 4) << 16 |
           uint64_t((stride & 0x3FFFF) >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// d (64 x kN floats over the warpgroup: kN / 2 per thread) += A (64 x 16, K-major) @ B (16 x kN, MN-major, so
// tnspB = 1). scale-d 1 (accumulate), scales of A and B 1. One instruction per dtype and width.
#define LABKIT_F8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                     "+f"(d[i + 6]), "+f"(d[i + 7])
#define LABKIT_F32 LABKIT_F8(0), LABKIT_F8(8), LABKIT_F8(16), LABKIT_F8(24)
#define LABKIT_F64 LABKIT_F8(0), LABKIT_F8(8), LABKIT_F8(16), LABKIT_F8(24), LABKIT_F8(32), LABKIT_F8(40), \
                   LABKIT_F8(48), LABKIT_F8(56)
#define LABKIT_F128 LABKIT_F64, LABKIT_F8(64), LABKIT_F8(72), LABKIT_F8(80), LABKIT_F8(88), LABKIT_F8(96), \
                    LABKIT_F8(104), LABKIT_F8(112), LABKIT_F8(120)
#define LABKIT_R32                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                    \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define LABKIT_R64                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                    \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "           \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "           \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define LABKIT_R128                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                    \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "           \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "           \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "           \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "           \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "           \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// clang-format on

template <typename T, int kN>
__device__ __forceinline__ void wgmma(float* d, uint64_t a, uint64_t b);

#ifdef LABKIT_SM90A
// clang-format off: one specialization per dtype and width N, made by a macro: the instruction's name carries both,
// its operands are the N / 2 accumulators (LABKIT_R<N/2>: their %-numbers, LABKIT_F<N/2>: their bindings), then the
// descriptors of A and B (%HALF and %NEXT, the two after the accumulators)
#define LABKIT_WGMMA_ONE(T, TYPE, N, HALF, NEXT)                                                                       \
    template <>                                                                                                        \
    __device__ __forceinline__ void wgmma<T, N>(float* d, uint64_t a, uint64_t b) {                                    \
        asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " " LABKIT_R##HALF ", %" #HALF    \
                     ", %" #NEXT ", 1, 1, 1, 0, 1;"                                                                    \
                     : LABKIT_F##HALF                                                                                  \
                     : "l"(a), "l"(b));                                                                                \
    }
#define LABKIT_WGMMA(N, HALF, NEXT) \
    LABKIT_WGMMA_ONE(__nv_bfloat16, "bf16", N, HALF, NEXT) LABKIT_WGMMA_ONE(__half, "f16", N, HALF, NEXT)
LABKIT_WGMMA(64, 32, 33)
LABKIT_WGMMA(128, 64, 65)
LABKIT_WGMMA(256, 128, 129)
#undef LABKIT_WGMMA
#undef LABKIT_WGMMA_ONE
// clang-format on
#endif

// One slot's worth of multiply-adds for one warpgroup: its 64 rows of the A tile (a_rows, 128-byte rows) times the
// kN columns of the B tile (b_tile, kN / 64 strips of kBK rows), kBK / 16 wgmmas, each k16 step 32 bytes further
// along A's rows and 16 rows (2048 bytes) further down B's strips.
template <typename T, int kN>
__device__ __forceinline__ void multiply_slot(float* d, const T* a_rows, const T* b_tile) {
#pragma unroll
    for (int k = 0; k < kBK / 16; k++) {
        wgmma<T, kN>(d, sw128_desc(a_rows + k * 16, 16, 1024), sw128_desc(b_tile + k * 16 * kStrip, kStripBytes, 1024));
    }
}

// The accumulators of one warpgroup's 64 x kN block into C at (row0, col0), rounded to T, guarded at the edges, from
// registers (version 8's epilogue, and the warp-specialized kernel's under an exercise's ring; the lesson's 9-12 go
// through shared memory: store_block_tma, store_block_staged, below).
// wgmma's layout: warp w of the warpgroup holds rows 16w .. 16w + 15; lane l holds rows l / 4 and l / 4 + 8 of
// those, and in each 8-column group columns 2 (l % 4) and 2 (l % 4) + 1: d[4j .. 4j + 3] are (row, c), (row, c + 1),
// (row + 8, c), (row + 8, c + 1) for c = 8j + 2 (l % 4). The four lanes of a quad (l / 4 alike) hold a row's groups.
//
// Each lane stores whole aligned 16-byte pieces of its rows: the quad transposes its words so that lane q holds all
// 8 columns of group j = 4i + q, takes group j - 1 from the lane before, and shifts those 16 elements into the 8 of
// the aligned piece that holds group j's first columns: a row of C starts o elements (0-7) past a 16-byte boundary
// (0 where N is a multiple of 8), so that piece holds columns 8j - o .. 8j - o + 7. The pieces at the tile's ends,
// which hold columns of the tiles beside it, go element by element. Storing each lane's two neighbouring columns
// as one 4-byte store instead (a quad writing a group's 16 bytes) was slower on an H200 (2026-12-04, the kernel's
// own time): 4096^3 197.3 us against 185.6, and where rows start off 16-byte boundaries far more, since a quad's
// 16 bytes then cut across two pieces of memory: 4096 x 4097 x 4096 212.9 against 197.9, 4095 x 4097 x 4093 221.8
// against 200.1. It was the stores' places that cost, not the work of shifting: the 4-byte stores put at aligned
// places (wrong values, to time them) made 4096 x 4097 x 4096 as fast as 4096 x 4104, 201 us against 209.

// Two floats rounded to T, as the 32 bits of a T pair (the lower column in the low half).
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float x, float y) {
    using T2 = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    T2 v;
    if constexpr (std::is_same_v<T, __half>) v = __floats2half2_rn(x, y);
    else v = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<uint32_t*>(&v);
}

// A quad's 4 x 4 words transposed in place: lane q's word k becomes lane k's word q. Two exchanges: lanes 1 apart
// swap the words whose index differs from their lane number in bit 0, then lanes 2 apart those that differ in bit 1;
// each lane sends and receives the same word.
__device__ __forceinline__ void transpose_quad(uint32_t* t, int q) {
    const bool bit0 = q & 1, bit1 = q & 2;
#pragma unroll
    for (int b = 0; b < 2; b++) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, bit0 ? t[2 * b] : t[2 * b + 1], 1);
        if (bit0) t[2 * b] = got;
        else t[2 * b + 1] = got;
    }
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, bit1 ? t[k] : t[2 + k], 2);
        if (bit1) t[k] = got;
        else t[2 + k] = got;
    }
}

// Elements e .. e + 7 (e = 0-8) of the 16 16-bit elements in words w[0..7] (element 2k in w[k]'s low half): one
// aligned 16-byte piece's worth, moved into place by whole words (e / 2), then by half a word where e is odd. The
// epilogue's stores (below) and the padding copy (matmul_hopper.cu's PadPack) both shift 16 bytes into place so.
__device__ __forceinline__ uint4 elements_from(const uint32_t* w, int e) {
    const int words = e / 2;
    uint32_t y[5];  // y[k] = w[k + words]: a select per word, so that w stays in registers
#pragma unroll
    for (int k = 0; k < 5; k++) {
        y[k] = w[k];
#pragma unroll
        for (int m = 1; m <= 4; m++)
            if (k + m < 8 && words == m) y[k] = w[k + m];
    }
    uint32_t out[4];
#pragma unroll
    for (int k = 0; k < 4; k++) out[k] = e % 2 ? __funnelshift_r(y[k], y[k + 1], 16) : y[k];
    return make_uint4(out[0], out[1], out[2], out[3]);
}

// The block's rows are rows_apart rows of C apart (1, or 8 where A was read through its eight residue maps: AMaps).
// Round i: lane q's words x[4..7] are group j = 4i + q (after transpose_quad), x[0..3] group j - 1 (the lane
// before's, or for the first lane the last lane's of the round before: carry); the aligned piece holding columns
// 8j - o .. 8j - o + 7 is elements 8 - o .. 15 - o of x (elements_from). One round more than there are groups of
// four gives the tile's last o columns a piece.
template <typename T, int kN>
__device__ __forceinline__ void store_block(T* c, const float* d, int64_t row0, int rows_apart, int64_t col0, int64_t M,
                                            int64_t N) {
    const int lane = threadIdx.x % 32, q = lane % 4;
    const int64_t r = row0 + int64_t(rows_apart) * ((threadIdx.x % kWarpgroup / 32) * 16 + lane / 4);
    const int lane_before = (lane & ~3) | ((q + 3) & 3);  // in the quad, and the last for the first
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t row = r + int64_t(rows_apart) * 8 * h;
        const bool row_in = row < M;
        T* at = c + (row_in ? row : 0) * N + col0;  // the tile's first column in this row
        const int o = int((reinterpret_cast<uintptr_t>(at) / 2) % 8);  // elements past a 16-byte boundary
        uint32_t carry[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int i = 0; i <= kN / 32; i++) {
            uint32_t x[8];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int j = 4 * i + k;  // the quad's groups this round: lane q holds pair q of each
                x[4 + k] = j < kN / 8 ? pack_pair<T>(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]) : 0u;
            }
            if (i < kN / 32) transpose_quad(x + 4, q);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const uint32_t got = __shfl_sync(0xffffffffu, x[4 + k], lane_before);
                x[k] = q == 0 ? carry[k] : got;
                carry[k] = got;
            }
            const uint4 piece = elements_from(x, 8 - o);
            const int first = 8 * (4 * i + q) - o;  // the piece's first column, in the tile
            if (!row_in) continue;
            if (first >= 0 && first + 8 <= kN && col0 + first + 8 <= N) {
                *reinterpret_cast<uint4*>(at + first) = piece;
            } else {  // at the tile's ends, or past N: the columns that are this tile's and C's
                const uint32_t w[4] = {piece.x, piece.y, piece.z, piece.w};
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    const int col = first + e;
                    if (col >= 0 && col < kN && col0 + col < N)
                        reinterpret_cast<uint16_t*>(at)[col] = uint16_t(w[e / 2] >> (16 * (e % 2)));
                }
            }
        }
    }
}

// Split-K (version 15): the accumulators of one warpgroup's 64 x kN block as they are, in float, into this split's
// partial tile of parts (M x N floats, rows N apart), guarded at the edges; the binding's reduction sums the splits'
// partials in a fixed order and rounds once. In wgmma's layout (store_block, above) a lane's d[4j .. 4j + 1] are two
// neighbouring columns of one row: one 8-byte store where N is even (every row then starts 8-byte aligned), so a quad
// writes a row's 32 bytes of an 8-column group at once.
template <int kN>
__device__ __forceinline__ void store_partial(float* parts, const float* d, int64_t row0, int rows_apart, int64_t col0,
                                              int64_t M, int64_t N) {
    const int lane = threadIdx.x % 32;
    const int64_t r = row0 + int64_t(rows_apart) * ((threadIdx.x % kWarpgroup / 32) * 16 + lane / 4);
    const bool pairs = N % 2 == 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t row = r + int64_t(rows_apart) * 8 * h;
        if (row >= M) continue;
        float* at = parts + row * N;
#pragma unroll
        for (int j = 0; j < kN / 8; j++) {
            const int64_t col = col0 + 8 * j + 2 * (lane % 4);
            const float x = d[4 * j + 2 * h], y = d[4 * j + 2 * h + 1];
            if (pairs && col + 1 < N) {
                *reinterpret_cast<float2*>(at + col) = make_float2(x, y);
            } else {
                if (col < N) at[col] = x;
                if (col + 1 < N) at[col + 1] = y;
            }
        }
    }
}

// The epilogue of versions 9-12 where TMA can write C (its rows a multiple of 16 bytes apart from a 16-byte
// boundary, A read through one map, not split-K): one warpgroup's 64 x kN block leaves through shared memory, a
// 64 x 64 box at a time. Each thread writes its accumulators' pairs, rounded to T, into a box laid out as TMA's
// 128-byte swizzle lays it out (row r's 16-byte piece p at p ^ (r % 8): a warp's 32 four-byte stores of one piece
// column land in 32 banks), then one thread hands the box to TMA, which stores it while the warpgroup goes on (to
// the next box, then to the next tile's wgmmas), and writes nothing past C's edges, so no thread guards a column.
// Two boxes per warpgroup take turns (`stores` counts the warpgroup's boxes): before one is written again, its
// store must have read it (bulk_wait_read<1>: all but the latest). Measured on an H200 (2026-12-04, ncu, bfloat16
// 16384 x 1024 x 1024, version 11) with store_block's shuffles and selects instead: the consumer warps spent about a
// third of their time in the epilogue, ~10,000 of ~31,700 cycles per tile, where the tile's wgmmas need ~16,400, and
// missed in the instruction cache there (its code unrolled for every offset of a row's start). Through shared memory
// (side by side with torch.matmul, bfloat16): 16384 x 1024 x 1024 67.6 -> 56.9 us (torch 52.9), 4096^3 0.917 -> 0.952
// of torch, 1024^3 0.55 -> 0.655.
constexpr int kBoxBytes = 64 * kStrip * 2;  // 8 KB: a 64 x 64 box of C

// A warpgroup's own barrier (1 or 2, by its number: 0 is __syncthreads'), for its 128 threads.
__device__ __forceinline__ void warpgroup_sync(int group) {
    asm volatile("bar.sync %0, %1;" ::"r"(group), "n"(kWarpgroup) : "memory");
}

// Columns 64s .. 64s + 63 of a warpgroup's 64 x kN accumulators into a box, rounded to T: lane l of warp w holds
// rows 16w + l / 4 and 16w + l / 4 + 8 (whose residue mod 8 is l / 4) of each 8-column group (store_block, above).
template <typename T>
__device__ __forceinline__ void fill_box(uint8_t* box, const float* d, int s) {
    const int lane = threadIdx.x % 32, q = lane % 4, quad = lane / 4;
    const int warp_row = (threadIdx.x % kWarpgroup / 32) * 16;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        uint8_t* row = box + (warp_row + quad + 8 * h) * 128;
#pragma unroll
        for (int p = 0; p < 8; p++) {  // the box's columns 8p .. 8p + 7: the accumulators' group j
            const int j = 8 * s + p;
            *reinterpret_cast<uint32_t*>(row + (p ^ quad) * 16 + 4 * q) =
                pack_pair<T>(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
    }
}

template <typename T, int kN>
__device__ __forceinline__ void store_block_tma(const float* d, uint8_t* boxes, int& stores, const CUtensorMap* map_c,
                                                int64_t row0, int64_t col0, int group) {
    const bool issues = threadIdx.x % kWarpgroup == 0;
#pragma unroll
    for (int s = 0; s < kN / kStrip; s++, stores++) {
        uint8_t* box = boxes + (stores % 2) * kBoxBytes;
        if (issues) bulk_wait_read<1>();
        warpgroup_sync(group);  // the box is free for everyone
        fill_box<T>(box, d, s);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // TMA (the async proxy) sees the writes
        warpgroup_sync(group);
        if (issues) {
            tma_store(map_c, box, int(col0) + s * kStrip, int(row0));
            bulk_commit();
        }
    }
}

// Where TMA cannot write C (rows an odd number of elements apart, a start off a 16-byte boundary, or the tile's rows
// rows_apart = 8 apart, A read through its residue maps), the same boxes, copied out by the warpgroup itself: each
// warp a row of the box at a time, lane l its elements l and l + 32, each a 2-byte store (64 bytes of a row per warp
// store, wherever the row starts), guarded at C's edges. A box is written again two boxes later, after the
// warpgroup's barrier of the box between, which every thread reaches only after copying its part of this one.
template <typename T, int kN>
__device__ __forceinline__ void store_block_staged(T* c, const float* d, uint8_t* boxes, int& stores, int64_t row0,
                                                   int rows_apart, int64_t col0, int64_t M, int64_t N, int group) {
    const int lane = threadIdx.x % 32, warp_row = (threadIdx.x % kWarpgroup / 32) * 16;
#pragma unroll
    for (int s = 0; s < kN / kStrip; s++, stores++) {
        uint8_t* box = boxes + (stores % 2) * kBoxBytes;
        fill_box<T>(box, d, s);
        warpgroup_sync(group);
#pragma unroll 4
        for (int r = 0; r < 16; r++) {
            const int row = warp_row + r;
            const int64_t at = row0 + int64_t(rows_apart) * row;
            if (at >= M) break;  // the rows after are past M too
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const int e = lane + 32 * half;  // the box's column: in piece e / 8, element e % 8
                const int64_t col = col0 + s * kStrip + e;
                if (col < N)
                    reinterpret_cast<uint16_t*>(c)[at * N + col] =
                        *reinterpret_cast<const uint16_t*>(box + row * 128 + ((e / 8) ^ (row % 8)) * 16 + (e % 8) * 2);
            }
        }
    }
}

// Dynamic shared memory, rounded up to the 1024 bytes that the 128-byte swizzle's pattern repeats over (the
// launchers ask for 1 KB more than they use).
__device__ __forceinline__ uint8_t* aligned_smem(uint8_t* raw) { return raw + ((1024 - smem_addr(raw) % 1024) % 1024); }

// ----------------------------------------------------------------------------------------------
// 9-12. Warp specialization: warpgroup 0 is the producer (one thread issues every TMA copy), warpgroups 1 ..
// kConsumers multiply. Per slot two barriers: full (the producer's arrival and TMA's bytes: the tiles are in) and
// empty (one arrival per consumer warpgroup: every consumer has finished reading it). The producer waits on
// empty before refilling a slot, a consumer on full before reading it; nobody waits on a block-wide barrier.
// Step i of the block uses slot i % kStages in pass i / kStages, and waits for the phase of that parity.
// The output tile is kM x kN; consumer warpgroup g computes rows (g - 1) * kM / kConsumers onward, as
// kM / kConsumers / 64 wgmmas of 64 x kN per k16. A consumer keeps one step's wgmmas in flight while it issues
// the next (wait_group 1), and hands back the slot of the step before, whose wgmmas are then done.
// Ring: the ring's bookkeeping, Ring::step(i, stages) (matmul_ring.h), and Ring::kPolls, how long a wait may take
// (0: as long as it takes); a wait that gives up sets *stuck and ends its thread.
// Split-K (version 15, the kernels that are not persistent): where `parts` is set, blockIdx.z is one of gridDim.z
// splits of the tile's k steps, the z-th run of ceil(steps / splits) of them, and the block stores its partial tile
// in float into parts' z-th M x N matrix (store_partial) rather than C; a split past the last step stores zeros.

template <int kM, int kN, int kConsumers, bool kPersistent>
struct WsShape {
    static constexpr int kSlotBytes = (kM / kStrip + kN / kStrip) * kStripBytes;  // 32 KB or 48 KB
    static constexpr int kStages = kSlotBytes == 32768 ? 5 : 4;  // 160 or 192 KB of the 227 KB a block may have
    static constexpr int kTileBytesA = kM * kBK * 2;
    static constexpr int kBoxes = kStages * kSlotBytes;  // after the ring: two C boxes per consumer warpgroup
    static constexpr int kSmem = kBoxes + kConsumers * 2 * kBoxBytes + 1024;
    static_assert(kSmem <= 227 * 1024, "the ring and the C boxes fit a block's shared memory");
    static constexpr int kThreads = (kConsumers + 1) * kWarpgroup;
    static constexpr int kHalves = kM / kConsumers / 64;  // 64-row blocks per consumer warpgroup
    // A narrow tile (TileWalk) is the last tile column's one 64-column strip of kNarrowTiles tile rows: two where a
    // persistent kernel's slot holds their A tiles and the strip (128 x 256 tiles: 2 x 16 KB + 8 KB of 48 KB), so that
    // each k step of B's strip serves 256 rows of A, not 128; else one. Its k steps to a slot: as many as the slot
    // holds, laid out as piece 0's A, piece 0's B, piece 1's A, ... (two for a 128 x 256 tile that is not
    // persistent: a narrow tile does a quarter of a full one's multiply-adds per step, so its steps wait on their
    // loads, and two per slot keep twice as many bytes in flight). Each consumer warpgroup multiplies kNarrowHalves
    // 64-row blocks of it.
    static constexpr int kNarrowTiles = kPersistent && 2 * kTileBytesA + kStripBytes <= kSlotBytes ? 2 : 1;
    static constexpr int kNarrowPiece = kNarrowTiles * kTileBytesA + kStripBytes;
    static constexpr int kNarrowDepth = kSlotBytes / kNarrowPiece;
    static constexpr int kNarrowHalves = kNarrowTiles * kM / kConsumers / 64;
};

// Output tile `tile` of a tiles_m x tiles_n grid, taken in groups of kGroup tile-rows: along a group's columns,
// each column's tile-rows in turn, so the blocks running together cover a few tile-rows and tile-columns (their A
// and B tiles stay in L2) instead of one long row of C. 132 blocks of 128 x 256 tiles load the fewest distinct rows
// of A and columns of B when they span twice as many tile-rows as tile-columns: 16 x 8.
constexpr int kGroup = 16;
__device__ __forceinline__ void tile_at(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int per_group = kGroup * tiles_n, first = (tile / per_group) * kGroup;
    const int rows = min(kGroup, tiles_m - first), in_group = tile % per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

// A narrow last tile column. Where N is a few columns past a multiple of kN (4097 = 16 x 256 + 1), the last tile
// column holds at most one 64-column strip of C: its tiles load that strip of B alone and multiply m64n64k16 (a
// quarter of a 128 x 256 tile's work), instead of zeros for the rest of a full tile (measured on an H200: 4096 x
// 4104 x 4096 took 230 us on 256 x 128 tiles, 4096^3 211 us: 16 more tiles of full work for 8 columns).
// In the persistent kernels the narrow tiles ("slivers") come after every full one and go to the blocks that have
// one full tile fewer than the others (the last wave's idle SMs), in turn: at 4095 x 4097 on 132 SMs, 512 full 128 x
// 256 tiles leave 16 blocks with 3, and the 16 slivers of two tile rows each (WsShape::kNarrowTiles) add half a
// tile's work to each of those, under the 4 of the rest. A sliver's tile rows are of one map of A (AMaps: rows of
// one lag), so a map's last sliver may hold one tile row and rows past the map's end (zeros, not stored).
// Measured on an H200 (2026-12-04, the kernel's own time, results/2026-12-04-nvidia-h200/matmul-narrow-tiles.json):
// 4096 x 4104 x 4096 (B's rows 4160 apart) 192.1-192.6 us with slivers of two tile rows against 194.1-194.4 with
// slivers of one (two k steps to a slot), 4095 x 4097 x 4093 199.7-200.3 against 201.7-201.9, and 4096^3 (no
// slivers) 188.3-188.8 against 187.8-188.2. Extending the tiles of the column before to 128 x 320 instead, so that
// no A tile is loaded twice (one more strip of B and one more wgmma per step, those tiles going to the blocks with
// one tile fewer), was no faster: 193.9 and 201.9, and 4096^3 189.5.
template <int kN, int kNarrowTiles = 1>
struct TileWalk {
    int tiles_m, cols;  // the full tiles: tiles_m x cols of them (the last of them cut by N where it has no narrow one)
    int full, slivers;  // how many full tiles; narrow ones (0 where N leaves no narrow column)
    int tiles_per_map, per_map;  // tile rows per map of A (AMaps); slivers per map
    // the blocks with one full tile fewer, which take the slivers: blocks first_short onward, shorts of them (all,
    // where every block has as many)
    int first_short, shorts;

    // maps x tiles_per_map tile rows (AMaps' residues and tiles_per_map; one map of them all for the choice)
    __host__ __device__ TileWalk(int maps, int row_tiles_per_map, int64_t N, int blocks) {
        const int64_t rem = N % kN;
        const bool narrow = kN > kStrip && rem != 0 && rem <= kStrip;
        tiles_per_map = row_tiles_per_map;
        per_map = (tiles_per_map + kNarrowTiles - 1) / kNarrowTiles;
        tiles_m = maps * tiles_per_map;
        cols = int(N / kN) + (rem != 0 && !narrow);
        full = tiles_m * cols;
        slivers = narrow ? maps * per_map : 0;
        first_short = blocks > 0 ? full % blocks : 0;
        shorts = blocks - first_short;
    }
    __host__ __device__ int tiles() const { return full + slivers; }

    // Block b's k-th tile (b + k * blocks among the full ones, then its slivers): false past its last. A sliver's
    // tm is its first tile row.
    __device__ bool at(int b, int blocks, int k, int& tm, int& tn, bool& narrow) const {
        const int own_full = b < full ? (full - 1 - b) / blocks + 1 : 0;
        if (k < own_full) {
            tile_at(b + k * blocks, tiles_m, cols, tm, tn);
            narrow = false;
            return true;
        }
        const int s = (b - first_short) + (k - own_full) * shorts;  // this block's (k - own_full)-th sliver
        if (b < first_short || s >= slivers) return false;
        tm = (s / per_map) * tiles_per_map + (s % per_map) * kNarrowTiles, tn = cols, narrow = true;
        return true;
    }
};

// A's tensor maps, and which rows of C each tile of rows holds. Where TMA reads A's rows where they are, one map
// (residues 1) of all M rows, and tile row tm holds rows tm * kM onward. Where it cannot (rows an odd number of
// elements apart, or a start off a 16-byte boundary), eight (residues 8): map r holds rows r, r + 8, r + 16, ...,
// which are 8 lda elements = 16 lda bytes apart, a multiple of 16 as TMA needs, from the 16-byte boundary at or
// before row r's start. Each of its rows then starts lag[r] elements (0-7) past the start of the map's row, the same
// lag for all of them, so a box at a 16-byte-aligned column x (the only columns a box may start at) holds A's
// columns x - lag[r] onward: the kernel multiplies it with B's rows from x - lag[r] onward (B's rows are its map's
// outer dimension, where a box may start anywhere), and k agrees in both tiles. Before a row's first column the box
// holds the end of the row before (lag[r] elements), which meets B's rows -lag[r] .. -1: zeros, which TMA fills in
// past B's edge; the consumers zero those columns of A too, since an infinity there times 0 would be NaN. Such a
// tile's rows are 8 apart, all of one map: tile row tm holds rows r + 8 (t * kM) onward, r = tm / tiles_per_map,
// t = tm % tiles_per_map. A box row of a map may span two 128-byte lines where one of a copy padded to 128 bytes
// spans one: on an H200 (2026-12-03) that cost ~7 us at 4096^3 (A's rows 8 x 4093 elements apart: 217 us, against
// 210 with rows 4096 apart).
struct AMaps {
    CUtensorMap map[8];
    int lag[8];
    int residues;  // 1 or 8
    int tiles_per_map;  // tiles of kM rows per map: C's tile rows are residues x tiles_per_map
};

// Whether eight residue maps hold A's rows in as many tiles of kM rows as one map would (so the choice among the
// versions, which counts tiles, holds for them too): 4095 rows are 8 x 4 tiles of 128 (rows of 512 or 511 per map),
// where 200 rows would be 8 tiles of 25 rows instead of 2.
constexpr bool residue_maps_fit(int64_t M, int kM) { return M >= 8 && 8 * cdiv(cdiv(M, 8), kM) == cdiv(M, kM); }

// A consumer warpgroup's rows (first_row onward, `rows` of them) of a slot's A tile read through a residue map: the
// lag columns before each row's first hold the end of the row before (AMaps), set to zeros here. With the 128-byte
// swizzle a row's first 16 bytes are its piece row % 8. Then a proxy fence, so that wgmma (the async proxy) sees
// these writes, and the warpgroup's own barrier, so that all are done.
template <typename T>
__device__ __forceinline__ void zero_lag(T* a_tile, int first_row, int rows, int lag, int group) {
    for (int r = threadIdx.x % kWarpgroup; r < rows; r += kWarpgroup) {
        const int row = first_row + r;
        uint16_t* piece = reinterpret_cast<uint16_t*>(a_tile + row * kBK + (row % 8) * 8);
        for (int e = 0; e < lag; e++) piece[e] = 0;  // 0x0000 is +0 in float16 and bfloat16
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    warpgroup_sync(group);
}

// The lesson's ring: matmul_ring_step, and waits without limit.
struct LessonRing {
    static constexpr int64_t kPolls = 0;
    __device__ static RingStep step(int64_t i, int stages) { return matmul_ring_step(i, stages); }
};

template <typename T, int kM, int kN, int kConsumers, bool kPersistent, typename Ring = LessonRing>
__global__ void __launch_bounds__(WsShape<kM, kN, kConsumers, kPersistent>::kThreads, 1)
    matmul_wgmma_ws_kernel(const __grid_constant__ AMaps a_maps, const __grid_constant__ CUtensorMap map_b, T* c,
                           int64_t M, int64_t N, int64_t K, int* stuck, float* parts,
                           const __grid_constant__ CUtensorMap map_c, bool c_by_tma) {
#ifndef LABKIT_SM90A
    __trap();
#else
    using S = WsShape<kM, kN, kConsumers, kPersistent>;
    extern __shared__ uint8_t raw_smem[];
    uint8_t* smem = aligned_smem(raw_smem);
    __shared__ __align__(8) uint64_t full[S::kStages], empty[S::kStages];
    const int t = threadIdx.x, group = t / kWarpgroup;
    // This block's k-th tile: (tm, tn), narrow where it is a sliver. The persistent kernels walk the tiles as
    // TileWalk says; the others have one tile each, their block's, narrow where N leaves a narrow last column.
    const TileWalk<kN, S::kNarrowTiles> walk(a_maps.residues, a_maps.tiles_per_map, N,
                                             kPersistent ? int(gridDim.x) : 0);
    // Tile row tm's map of A, its first row in that map, and the lag of its rows (AMaps), whose columns shift the
    // k steps: ceil((K + lag) / 64) of them, kNarrowDepth to a slot where the tile is narrow. The producer and the
    // consumers walk the ring by this count, so it is made here only.
    auto rows_of = [&](int tm, bool narrow, int& map, int& first, int& lag, int& steps) {
        map = tm / a_maps.tiles_per_map;
        first = (tm % a_maps.tiles_per_map) * kM;
        lag = a_maps.lag[map];
        steps = int((K + lag + kBK - 1) / kBK);
        if (narrow) steps = (steps + S::kNarrowDepth - 1) / S::kNarrowDepth;
    };
    // This block's steps of the tile: all of them, or its split's run (split-K, which the persistent kernels have not:
    // their code stays as it was without it)
    auto run_of = [&](int steps, int& begin, int& end) {
        if constexpr (kPersistent) {
            begin = 0, end = steps;
        } else {
            const int per = (steps + int(gridDim.z) - 1) / int(gridDim.z);
            begin = min(steps, int(blockIdx.z) * per), end = min(steps, begin + per);
        }
    };
    auto tile_of = [&](int k, int& tm, int& tn, bool& narrow) {
        if constexpr (kPersistent) {
            return walk.at(int(blockIdx.x), int(gridDim.x), k, tm, tn, narrow);
        } else {
            tm = int(blockIdx.y), tn = int(blockIdx.x);
            narrow = walk.slivers > 0 && tn == walk.cols;
            return k == 0;
        }
    };
    if (t == 0) {
        for (int s = 0; s < S::kStages; s++) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], kConsumers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto slot_a = [&](int s) { return reinterpret_cast<T*>(smem + s * S::kSlotBytes); };
    auto slot_b = [&](int s) { return reinterpret_cast<T*>(smem + s * S::kSlotBytes + S::kTileBytesA); };

    if (group == 0) {  // the producer
        if constexpr (kConsumers == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
        if (t == 0) {
            int i = 0;  // this block's step count over all its tiles: the ring's position
            int tm, tn, map, first, lag, steps, begin, end;
            bool narrow;
            for (int k = 0; tile_of(k, tm, tn, narrow); k++) {
                rows_of(tm, narrow, map, first, lag, steps);
                run_of(steps, begin, end);
                for (int step = begin; step < end; step++, i++) {
                    const RingStep ring = Ring::step(i, S::kStages);
                    const int s = ring.slot;
                    if (!bar_wait<Ring::kPolls>(&empty[s], ring.empty_parity)) {  // the consumers' release of it
                        atomicExch(stuck, 1);
                        return;
                    }
                    if (narrow) {  // kNarrowDepth k steps of the A tiles and B's one strip (past K: zeros)
                        bar_expect_bytes(&full[s], S::kNarrowDepth * S::kNarrowPiece);
                        for (int d = 0; d < S::kNarrowDepth; d++) {
                            const int at = (step * S::kNarrowDepth + d) * kBK;
                            T* piece = slot_a(s) + d * S::kNarrowPiece / int(sizeof(T));
                            for (int u = 0; u < S::kNarrowTiles; u++)
                                tma_load(piece + u * S::kTileBytesA / int(sizeof(T)), &a_maps.map[map], at,
                                         first + u * kM, &full[s]);
                            tma_load(piece + S::kNarrowTiles * S::kTileBytesA / int(sizeof(T)), &map_b, tn * kN,
                                     at - lag, &full[s]);
                        }
                        continue;
                    }
                    bar_expect_bytes(&full[s], S::kSlotBytes);
                    tma_load(slot_a(s), &a_maps.map[map], step * kBK, first, &full[s]);
                    for (int j = 0; j < kN / kStrip; j++)
                        tma_load(slot_b(s) + j * kBK * kStrip, &map_b, tn * kN + j * kStrip, step * kBK - lag,
                                 &full[s]);
                }
            }
        }
    } else {  // a consumer
        if constexpr (kConsumers == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
        // this warpgroup's first row in a full tile and in a narrow one
        const int row_in_tile = (group - 1) * (kM / kConsumers), row_in_narrow = row_in_tile * S::kNarrowTiles;
        const bool releases = t % kWarpgroup == 0;  // one arrival per warpgroup on the empty barriers
        // C through TMA (store_block_tma): not with a ring whose waits may give up (an exercise's), since a thread
        // that gave up would leave its warpgroup's barrier waiting for it
        constexpr bool kTmaStore = Ring::kPolls == 0;
        uint8_t* boxes = smem + S::kBoxes + (group - 1) * 2 * kBoxBytes;
        int stores = 0;
        int i = 0;
        int tm, tn, map, first, lag, steps, begin, end;
        bool narrow;
        for (int k = 0; tile_of(k, tm, tn, narrow); k++) {
            rows_of(tm, narrow, map, first, lag, steps);
            run_of(steps, begin, end);
            // The accumulators of 64-row block h: d + h * kN / 2 in a full tile; in a narrow one the first kStrip / 2
            // of those, or where a narrow tile has more such blocks than a full one (a pair of tile rows), an array of
            // their own (inside the full tile's, ptxas serializes the kernel's wgmmas: C7511)
            constexpr bool kOwn = S::kNarrowHalves > S::kHalves;
            constexpr int kFull = S::kHalves * kN / 2, kNarrow = kOwn ? S::kNarrowHalves * kStrip / 2 : 1;
            float d[kFull], dn[kNarrow];
#pragma unroll
            for (int v = 0; v < kFull; v++) d[v] = 0.0f;
#pragma unroll
            for (int v = 0; v < kNarrow; v++) dn[v] = 0.0f;
            auto narrow_d = [&](int h) { return kOwn ? dn + h * kStrip / 2 : d + h * kN / 2; };
            int last = 0;  // the slot of the step before
            for (int step = begin; step < end; step++, i++) {
                const RingStep ring = Ring::step(i, S::kStages);
                const int s = ring.slot;
                if (!bar_wait<Ring::kPolls>(&full[s], ring.full_parity)) {
                    atomicExch(stuck, 1);
                    return;
                }
                if (step == 0 && lag > 0) {
                    if (narrow) zero_lag(slot_a(s), row_in_narrow, S::kNarrowHalves * 64, lag, group);
                    else zero_lag(slot_a(s), row_in_tile, kM / kConsumers, lag, group);
                }
                wgmma_fence();
                if (narrow) {  // the same for the whole warpgroup, as wgmma requires
#pragma unroll
                    for (int p = 0; p < S::kNarrowDepth; p++) {
                        const T* piece = slot_a(s) + p * S::kNarrowPiece / int(sizeof(T));
#pragma unroll
                        for (int h = 0; h < S::kNarrowHalves; h++)
                            multiply_slot<T, kStrip>(narrow_d(h), piece + (row_in_narrow + h * 64) * kBK,
                                                     piece + S::kNarrowTiles * S::kTileBytesA / int(sizeof(T)));
                    }
                } else {
#pragma unroll
                    for (int h = 0; h < S::kHalves; h++)
                        multiply_slot<T, kN>(d + h * kN / 2, slot_a(s) + (row_in_tile + h * 64) * kBK, slot_b(s));
                }
                wgmma_commit();
                wgmma_wait<1>();  // the step before's wgmmas are done: its slot goes back
                if (releases && step > begin) bar_arrive(&empty[last]);
                last = s;
            }
            wgmma_wait<0>();
            if (releases && end > begin) bar_arrive(&empty[last]);
            // 64-row block h starts at row first + row_in_tile (or row_in_narrow) + h * 64 of map `map`, which is
            // row `map` + residues x that of C
            const int64_t col0 = int64_t(tn) * kN;
            if (!kPersistent && parts) {  // split-K: this split's partial tile, in float
                float* part = parts + int64_t(blockIdx.z) * M * N;
                if (narrow) {
#pragma unroll
                    for (int h = 0; h < S::kNarrowHalves; h++) {
                        const int64_t row0 = map + int64_t(a_maps.residues) * (first + row_in_narrow + h * 64);
                        store_partial<kStrip>(part, narrow_d(h), row0, a_maps.residues, col0, M, N);
                    }
                } else {
#pragma unroll
                    for (int h = 0; h < S::kHalves; h++) {
                        const int64_t row0 = map + int64_t(a_maps.residues) * (first + row_in_tile + h * 64);
                        store_partial<kN>(part, d + h * kN / 2, row0, a_maps.residues, col0, M, N);
                    }
                }
            } else if (kTmaStore && c_by_tma) {  // one map of A: row `first` of it is row `first` of C
                if (narrow) {
#pragma unroll
                    for (int h = 0; h < S::kNarrowHalves; h++)
                        store_block_tma<T, kStrip>(narrow_d(h), boxes, stores, &map_c, first + row_in_narrow + h * 64,
                                                   col0, group);
                } else {
#pragma unroll
                    for (int h = 0; h < S::kHalves; h++)
                        store_block_tma<T, kN>(d + h * kN / 2, boxes, stores, &map_c, first + row_in_tile + h * 64,
                                               col0, group);
                }
            } else if (kTmaStore) {
                if (narrow) {
#pragma unroll
                    for (int h = 0; h < S::kNarrowHalves; h++) {
                        const int64_t row0 = map + int64_t(a_maps.residues) * (first + row_in_narrow + h * 64);
                        store_block_staged<T, kStrip>(c, narrow_d(h), boxes, stores, row0, a_maps.residues, col0, M, N,
                                                      group);
                    }
                } else {
#pragma unroll
                    for (int h = 0; h < S::kHalves; h++) {
                        const int64_t row0 = map + int64_t(a_maps.residues) * (first + row_in_tile + h * 64);
                        store_block_staged<T, kN>(c, d + h * kN / 2, boxes, stores, row0, a_maps.residues, col0, M, N,
                                                  group);
                    }
                }
            } else if (narrow) {
#pragma unroll
                for (int h = 0; h < S::kNarrowHalves; h++) {
                    const int64_t row0 = map + int64_t(a_maps.residues) * (first + row_in_narrow + h * 64);
                    store_block<T, kStrip>(c, narrow_d(h), row0, a_maps.residues, col0, M, N);
                }
            } else {
#pragma unroll
                for (int h = 0; h < S::kHalves; h++) {
                    const int64_t row0 = map + int64_t(a_maps.residues) * (first + row_in_tile + h * 64);
                    store_block<T, kN>(c, d + h * kN / 2, row0, a_maps.residues, col0, M, N);
                }
            }
        }
        if (kTmaStore && c_by_tma && t % kWarpgroup == 0) bulk_wait();  // C is written before the block ends
    }
#endif
}

// ----------------------------------------------------------------------------------------------
// Host side: tensor maps and launchers.

// cuTensorMapEncodeTiled is a driver function (libcuda); the runtime hands out its address, so the op need not
// link libcuda itself. Asked once per process; null where the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found{};
        const cudaError_t e =
            cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
        if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
            cudaGetLastError();
            return PFN_cuTensorMapEncodeTiled_v12000(nullptr);
        }
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }();
    return encode;
}

// A row-major rows x cols matrix of 16-bit T whose rows are `stride` elements apart (a multiple of 8: 16 bytes),
// read in boxes of box_rows x 64 (128 bytes, the swizzle's row), with zeros past its edges.
template <typename T>
bool make_map(CUtensorMap* map, const T* p, int64_t rows, int64_t cols, int64_t stride, int box_rows) {
    const auto encode = tensor_map_encoder();
    if (!encode) return false;
    const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
    const cuuint64_t strides[1] = {cuuint64_t(stride) * sizeof(T)};  // bytes from one row to the next
    const cuuint32_t box[2] = {kStrip, cuuint32_t(box_rows)};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUtensorMapDataType type = std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    return encode(map, type, 2, const_cast<T*>(p), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// A's maps for tiles of kM rows (AMaps): one where TMA reads A's rows where they are, else the eight residue maps
// (the caller has checked residue_maps_fit). Map r: rows r, r + 8, ... of A from the 16-byte boundary at or before row
// r's start, lag[r] elements before it, each K + lag[r] elements wide (to A's last element of the row, no further).
template <typename T>
bool make_a_maps(AMaps* maps, const T* a, int64_t M, int64_t K, int64_t lda, int kM) {
    *maps = AMaps{};
    if (matmul_tma_readable(a, lda)) {
        maps->residues = 1;
        maps->tiles_per_map = int(cdiv(M, kM));
        return make_map(&maps->map[0], a, M, K, lda, kM);
    }
    if (!residue_maps_fit(M, kM)) return false;
    maps->residues = 8;
    maps->tiles_per_map = int(cdiv(cdiv(M, 8), kM));
    for (int r = 0; r < 8; r++) {
        const uintptr_t start = reinterpret_cast<uintptr_t>(a + r * lda);
        maps->lag[r] = int(start % 16) / 2;
        if (!make_map(&maps->map[r], reinterpret_cast<const T*>(start - start % 16), (M - r + 7) / 8, K + maps->lag[r],
                      8 * lda, kM))
            return false;
    }
    return true;
}

// A kernel's dynamic shared memory past the default 48 KB needs asking for, once per kernel and device (a template
// per kernel, so that each has a per_device table of its own), then the launch, checked.
template <auto kKernel, typename... Args>
cudaError_t launch(int threads, int smem, dim3 blocks, int device, cudaStream_t stream, Args... args) {
    const int allowed = per_device(device, [=] {
        return cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) == cudaSuccess ? 1 : 2;
    });
    if (allowed != 1) return cudaErrorInvalidValue;
    kKernel<<<blocks, threads, smem, stream>>>(args...);
    return cudaGetLastError();
}

// Whether `device` can run the Hopper kernels of the file that asks: compute capability 9.0, a driver with TMA's
// tensor maps, and device code built for sm_90a (`built`: that file's __device__ int, 1 in sm_90a code and 0 in
// other targets' code). Asked once per device.
bool hopper_ready(int device, const void* built) {
    return per_device(device, [device, built] {
               if (device_attribute(cudaDevAttrComputeCapabilityMajor, device, 0) != 9 || !tensor_map_encoder())
                   return 2;
               int v = 0;
               const cudaError_t e = cudaMemcpyFromSymbol(&v, built, sizeof(int));
               return query_result(e, v, 0) == 1 ? 1 : 2;
           }) == 1;
}

int sm_count(int device) {
    return per_device(device, [device] { return device_attribute(cudaDevAttrMultiProcessorCount, device, 1); });
}

// Versions 9-12: a grid of (column tiles, row tiles), or one block per SM (fewer where there are fewer tiles) for the
// persistent ones; `stuck` may be null where Ring waits without limit. Split-K (not persistent): `splits` blocks per
// tile (gridDim.z), each storing its partial tile into parts (splits x M x N floats) instead of C.
template <typename T, int kM, int kN, int kConsumers, bool kPersistent, typename Ring = LessonRing>
cudaError_t launch_ws(const AMaps& a_maps, const CUtensorMap& map_b, T* c, int64_t M, int64_t N, int64_t K, int device,
                      cudaStream_t stream, int* stuck = nullptr, float* parts = nullptr, int splits = 1) {
    using S = WsShape<kM, kN, kConsumers, kPersistent>;
    if (kPersistent && parts) return cudaErrorInvalidValue;  // a persistent block walks whole tiles
    const TileWalk<kN, S::kNarrowTiles> walk(a_maps.residues, a_maps.tiles_per_map, N, 1);
    dim3 grid(unsigned(cdiv(N, kN)), unsigned(walk.tiles_m), unsigned(parts ? splits : 1));
    if (kPersistent) grid = dim3(unsigned(walk.tiles() < sm_count(device) ? walk.tiles() : sm_count(device)));
    // C through TMA where it can write C's rows (store_block_tma), in boxes of 64 x 64
    CUtensorMap map_c{};
    bool c_by_tma = false;
    if constexpr (Ring::kPolls == 0)
        c_by_tma = !parts && a_maps.residues == 1 && N % 8 == 0 && aligned16(c) && make_map(&map_c, c, M, N, N, 64);
    return launch<matmul_wgmma_ws_kernel<T, kM, kN, kConsumers, kPersistent, Ring>>(
        S::kThreads, S::kSmem, grid, device, stream, a_maps, map_b, c, M, N, K, stuck, parts, map_c, c_by_tma);
}

// The same with one map of A's M rows (exercise 11's launcher).
template <typename T, int kM, int kN, int kConsumers, bool kPersistent, typename Ring = LessonRing>
cudaError_t launch_ws(const CUtensorMap& map_a, const CUtensorMap& map_b, T* c, int64_t M, int64_t N, int64_t K,
                      int device, cudaStream_t stream, int* stuck = nullptr) {
    AMaps a_maps{};
    a_maps.map[0] = map_a;
    a_maps.residues = 1;
    a_maps.tiles_per_map = int(cdiv(M, kM));
    return launch_ws<T, kM, kN, kConsumers, kPersistent, Ring>(a_maps, map_b, c, M, N, K, device, stream, stuck);
}

}  // namespace
