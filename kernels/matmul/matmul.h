// matmul.h: the torch-free entry points of matmul, shared by the kernels (matmul_cpu.cpp, matmul.cu) and the
// binding (matmul.cpp).
//
// C = A @ B for row-major, contiguous A (M x K), B (K x N) and C (M x N): C[i][j] = sum over k of A[i][k] B[k][j].
// Accumulated in float for float32, float16 and bfloat16, in double for float64; each result is stored in the
// inputs' dtype (rounded once), as torch.matmul does. K = 0 gives zeros.
#pragma once
#include <cstdint>

#include "kit.h"

// C = A @ B on the CPU. M, N, K >= 0.
void matmul_cpu(DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The lesson's versions (matmul.cu explains each). 1-6 and 13-14 take float32, 7-12 (tensor cores) float16
// and bfloat16; kMatmulFast is what ops.matmul runs, for every dtype.
enum MatmulVersion : int {
    kMatmulFast = 0,
    kMatmulNaive = 1,
    kMatmulCoalesced = 2,
    kMatmulSmem = 3,
    kMatmulReg1d = 4,
    kMatmulReg2d = 5,
    kMatmulVec = 6,
    kMatmulWmma = 7,
    kMatmulWgmma = 8,       // matmul_hopper.cu: TMA + mbarrier + wgmma, 128 x 128, one warpgroup
    kMatmulWarpSpec = 9,    // a producer and a consumer warpgroup over a ring of 5 slots
    kMatmulWide = 10,       // 128 x 256 on two consumer warpgroups, setmaxnreg
    kMatmulPersistent = 11, // 10, one block per SM looping over tiles in L2-friendly groups
    kMatmulTall = 12,       // 11 with 256 x 128 tiles, for shapes whose last wave of 128 x 256 ones is nearly empty
    kMatmulWarptile = 13,   // float32 again: 6 with warp tiles whose shared-memory reads are free of bank conflicts
    kMatmulPipelined = 14,  // 13 with two shared-memory stages, the next step's loads in flight during this one's math
    kMatmulSplitK = 15,  // 14 (float32) or 9 (16 bits) with K cut into ranges, partial tiles summed in order
};

// Whether `version` is one of matmul_hopper.cu's (8-12: TMA, wgmma; 16-bit only).
constexpr bool matmul_is_hopper(int version) { return version >= kMatmulWgmma && version <= kMatmulTall; }
// Whether `version` reads its `dtype` inputs with TMA: the Hopper versions, and split-K in 16 bits.
constexpr bool matmul_reads_by_tma(int version, DType dtype) {
    return matmul_is_hopper(version) || (version == kMatmulSplitK && dtype != DType::f32 && dtype != DType::f64);
}

// Split-K's model of the time of cutting an M x N x K product of `tiles` output tiles into `splits` ranges of k, where
// the GPU holds `slots` blocks of the kernel at once, in steps of k of one wave of blocks: `step` (what one step of
// k of a wave of this kernel costs, in a unit its caller chooses) times the waves the blocks take times the depth of
// a range, plus, for each range, writing and then reading one partial product of M x N floats, which costs
// partial_k units per 2^18 elements. The figures are the caller's, fitted to an H200: a 16-bit tile multiplies its k
// far faster than a float32 one, so a partial product costs it far more steps.
inline double matmul_split_cost(int64_t tiles, int64_t slots, int64_t M, int64_t N, int64_t K, int64_t splits,
                                double step, double partial_k) {
    const double partials = splits > 1 ? double(splits) * partial_k * double(M) * double(N) / 262144.0 : 0.0;
    return step * double(cdiv(tiles * splits, slots)) * double(cdiv(K, splits)) + partials;
}

// Split-K's rule: the number of ranges (1: none) that matmul_split_cost finds fastest, each range at least min_k deep,
// at most 32 of them; the fewest among equal times.
inline int matmul_split_rule(int64_t tiles, int64_t slots, int64_t M, int64_t N, int64_t K, int64_t min_k, double step,
                             double partial_k) {
    int best = 1;
    for (int splits = 2; splits <= 32 && K / splits >= min_k; splits++)
        if (matmul_split_cost(tiles, slots, M, N, K, splits, step, partial_k) <
            matmul_split_cost(tiles, slots, M, N, K, best, step, partial_k))
            best = splits;
    return best;
}

// Whether `device` has the tensor cores version 7 needs (bfloat16 WMMA: compute capability 8.0, Ampere, or newer).
bool matmul_wmma_supported(int device);

// Whether `device` can run versions 8-11: a Hopper GPU (compute capability 9.0) with device code built for sm_90a,
// and a driver with TMA's tensor maps.
bool matmul_hopper_available(int device);
// Whether TMA can read a 16-bit matrix at p whose rows are `row_stride` elements apart: rows a multiple of 16 bytes
// apart, and a 16-byte-aligned start. The binding copies an input that it cannot read into one it can (rows padded
// to 64 elements), unless it is an A that the version reads through its residue maps (matmul_reads_a_by_residue).
bool matmul_tma_readable(const void* p, int64_t row_stride);
// Whether `version` reads an A of M rows that TMA cannot read as they are through eight tensor maps, one per residue
// of the row number mod 8 (matmul_hopper.cuh's AMaps), rather than from a padded copy: versions 9-12, where eight
// maps take no more tiles than one would (4095 rows, not 200).
bool matmul_reads_a_by_residue(int version, int64_t M);
// One copy for matmul_pad_rows: a rows x cols matrix of 16-bit elements whose rows are ld_src elements apart (each
// row contiguous; any 2-byte alignment) into dst, whose rows are ld_dst apart (a multiple of 8, dst 16-byte aligned):
// what TMA can read. dst's columns past cols, up to the next multiple of 8, get unspecified values.
struct MatmulPadJob {
    void* dst;
    int64_t ld_dst;
    const void* src;
    int64_t ld_src, rows, cols;
};
// The copies jobs[0 .. count - 1] (count 1 or 2: A's and B's), in one launch.
cudaError_t matmul_pad_rows(const MatmulPadJob* jobs, int count, cudaStream_t stream);
// Which of versions 9-12 suits an M x N output on `device`: the one whose tiles fill its SMs best.
int matmul_hopper_choice(int64_t M, int64_t N, int device);
// How many ranges of k split-K cuts an M x N x K product of 16-bit inputs into on `device` (matmul_split_rule
// for its Hopper kernel's tiles): 1 where the output's tiles alone fill the SMs.
int matmul_hopper_splits(int64_t M, int64_t N, int64_t K, int device);
// C = A @ B with version 8-12 or 15 (matmul_hopper.cu), 16-bit dtypes only, A's rows lda elements apart and B's ldb
// (matmul_tma_readable holds for both); the caller checks matmul_hopper_available. Version 15 writes its `splits`
// partial products into parts (splits x M x N floats) instead of C; the caller sums them (matmul_cuda).
cudaError_t matmul_hopper(int version, DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N,
                          int64_t K, int64_t lda, int64_t ldb, int device, cudaStream_t stream, float* parts = nullptr,
                          int splits = 1);
// The version ops.matmul runs for an M x N x K product of `dtype` on `device` (never kMatmulFast): the fastest that
// the GPU and the build allow.
int matmul_fast_version(DType dtype, int64_t M, int64_t N, int64_t K, int device);
// How many ranges of k `version` cuts an M x N x K product of `dtype` into on `device`: split-K's count
// (matmul_split_rule), 1 for every other version. The binding allocates that many M x N partial products in float.
int matmul_splits(int version, DType dtype, int64_t M, int64_t N, int64_t K, int device);

// C = A @ B on the GPU with `version` (1-15: the binding resolves kMatmulFast first, with matmul_fast_version, since
// the version decides whether its inputs need padding), launched on `stream`, returning the launch's error (cudaSuccess if none).
// M, N, K >= 1 (the binding handles empty shapes). A's rows are lda elements apart and B's ldb: K and N, except for
// versions 8-12 and 15 in 16 bits, whose inputs the binding may have padded. Split-K (15) takes splits =
// matmul_splits(...) and, where that is more than 1, parts: room for splits x M x N floats, where the partial
// products go before their sum goes to C.
cudaError_t matmul_cuda(int version, DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N,
                        int64_t K, int64_t lda, int64_t ldb, int device, cudaStream_t stream, float* parts = nullptr,
                        int splits = 1);
#endif
