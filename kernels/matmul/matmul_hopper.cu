// matmul_hopper.cu: C = A @ B in float16 and bfloat16 on Hopper's tensor cores (H100, H200: sm_90a), the
// versions after matmul.cu's seven. Same problem: A (M x K), B (K x N), C (M x N), row-major, accumulated in float.
//
// Why version 7 stops at ~8% of cuBLAS on an H200. WMMA compiles to mma.sync, Ampere's instruction: each warp
// multiplies 16 x 16 x 16 fragments that it first loads from shared memory into its own registers, and every
// thread of the block also copies the tiles from DRAM to shared memory itself. On Hopper the tensor cores are fed
// differently, and three pieces of hardware do the work the threads did:
//   - TMA (the tensor memory accelerator): one thread hands it a tile's coordinates and a "tensor map" (the
//     matrix's address, sizes and strides, made once on the host), and it copies the whole tile from DRAM to
//     shared memory, zero-filling past the matrix's edges, with no registers and no address arithmetic per element.
//   - mbarrier: a barrier object in shared memory that counts both arrivals and bytes; TMA adds the bytes it wrote,
//     so a thread waiting on it knows the tile has landed. Its phase flips each time it completes (0, 1, 0, ...), so
//     one barrier per slot of a ring serves every pass over the ring.
//   - wgmma: a warpgroup (4 warps, 128 threads) issues one asynchronous multiply-add of a 64 x N x 16 block, N up
//     to 256, with both operands read straight from shared memory (described by a 64-bit "matrix descriptor") and
//     the 64 x N float accumulators spread over the 128 threads' registers. It runs while the threads go on; they
//     wait for it only when they need its result (wgmma.commit_group / wait_group).
// wgmma wants its operands in shared memory in one of a few layouts. With TMA's 128-byte swizzle, a tile is stored
// as rows of 128 bytes (64 elements) whose 16-byte pieces are permuted by the row number (row r's piece p goes to
// p ^ (r % 8)), so that 8 consecutive rows read at one column land in 8 different banks; wgmma undoes the
// permutation itself. A is K-major (a row of A is contiguous in k); B, row-major K x N, is "MN-major" (a row of
// B is contiguous in n), which wgmma reads transposed (its tnspB bit): B's tile is stored as 64-column strips, each
// a BK x 64 block of 128-byte rows.
//
// Napkin math (H200, dense bf16 ~990 TFLOP/s on 132 SMs, ~4.8 TB/s): a 128 x 128 output tile and a 64-deep k step
// load (128 + 128) x 64 x 2 = 32 KB and do 2 x 128 x 128 x 64 = 2.1 MFLOP, 64 flop per byte: above the ~206 flop/byte
// where this GPU turns compute-bound only if L2 catches most reloads (every A tile is loaded by N / 128 blocks).
// A 128 x 256 tile does 85 flop per byte loaded. Per SM, 7.5 TFLOP/s means one 64 x 256 x 16 wgmma (524 KFLOP) every
// ~70 ns: the loads must be several steps ahead, which is what the ring of shared-memory slots is for.
//
// Versions, simplest first (ops.matmul(a, b, version=...) runs one; each checks against float64 in the tests):
//   8. matmul_tma_wgmma_kernel     one warpgroup per block computes a 128 x 128 tile: thread 0 asks TMA for the
//                                   tiles of A and B a few k steps ahead into a ring of 4 slots, everyone waits on
//                                   the slot's mbarrier, then issues wgmma m64n128k16 for both 64-row halves and
//                                   waits for it before the slot is refilled (a __syncthreads per step).
//   9. matmul_wgmma_ws_kernel<128, 128, 1, false>   warp specialization: a producer warpgroup only issues TMA
//                                   copies, a consumer warpgroup only multiplies; a second mbarrier per slot ("empty")
//                                   lets the consumer hand a slot back, so neither waits for a block-wide barrier and
//                                   the producer runs as far ahead as the ring (5 slots) allows. The consumer keeps
//                                   one step's wgmmas in flight while it issues the next.
//  10. matmul_wgmma_ws_kernel<128, 256, 2, false>   a 128 x 256 tile on two consumer warpgroups, 64 x 256 each (one
//                                   m64n256k16 per k16: 128 accumulators per thread): more flops per byte loaded and
//                                   per instruction. setmaxnreg moves registers from the producer, which needs few,
//                                   to the consumers (240 each), so the accumulators never spill.
//  11. matmul_wgmma_ws_kernel<128, 256, 2, true>    persistent: one block per SM loops over the output tiles, so the
//                                   producer loads the next tile's first slots while the consumers store the last
//                                   tile; tiles are taken in groups of 16 tile-rows, so blocks running at the same
//                                   time share their A rows and B columns in L2.
//  12. matmul_wgmma_ws_kernel<256, 128, 2, true>    11 with 256 x 128 tiles, for the shapes whose last wave of
//                                   128 x 256 tiles would leave most SMs idle (4096 x 4224: 544 such tiles are 4.1
//                                   waves of 132; 528 of 256 x 128 are exactly 4).
//  15. split-K in 16 bits       9's or 10's kernel with a run of the ring's steps per blockIdx.z, storing its partial
//                                   tile in float (store_partial) for matmul.cu to sum: a long K under few tiles
//                                   (split_plan, below, picks the tiles and the number of ranges).
// Where N is at most 64 columns past a multiple of the tile's width (4097), 9-12 compute the last tile column
// as narrow tiles of one 64-column strip, and the persistent ones give those to the blocks with one tile fewer
// (TileWalk in matmul_hopper.cuh); a 128 x 256 tile's slot holds two k steps of a narrow one, or in 11 one k step
// of a narrow tile two tile rows tall (one strip of B for 256 rows of A).
// ops.matmul picks among 9-12 by how well their tiles fill the SMs (matmul_hopper_choice, at the end), and 15 where
// too few tiles leave SMs idle under a long K (matmul_hopper_splits).
// TMA reads rows that are a multiple of 16 bytes apart, each box from a 16-byte boundary (on an H200, a box at
// column 1 of a bfloat16 matrix stops the kernel with an illegal instruction: scripts/experiment_tma_box_start.cu).
// Where A's rows are not so (K not a multiple of 8, or a view starting mid-row), 9-12 read A where it is, through
// eight tensor maps, one per residue of the row number mod 8: rows 8 apart are a multiple of 16 bytes apart, and the
// rows of one map all start the same few elements past a 16-byte boundary, an offset the kernel moves onto the k of B's
// rows, which may start anywhere (AMaps in matmul_hopper.cuh). They do so where A has rows enough for the eight maps
// to take no more tiles than one would (4095 rows, not 200). Version 8 and B (whose offset would move C's columns,
// not k) are copied by the binding into rows padded to 128 bytes (matmul_pad_rows, below).
// On an H200 (2026-12-04, bfloat16, make bench) 4095 x 4097 x 4093 ran at 0.865 and 0.870 of 4096^3's speed in two
// runs (227-228 us against 197-198; 0.848-0.850 with narrow tiles one tile row tall, 0.818 with both inputs copied
// and C stored in 4-byte pairs, 2026-12-03). Beside 4096^3 (results/2026-12-04-nvidia-h200/
// matmul-variants-unaligned.json, events around each call): B's copy ~17 us, A's maps ~5 (their rows start part way
// into 128-byte lines, where a copy's rows start on one), the narrow last tile column ~5.5 (4096 x 4104 x 4096
// 203.5 us against 198.0, B's rows 4160 apart in both), C's rows off 16-byte boundaries ~2 (4097: 205.2).
// Other ways in were slower. Three warps of the producer warpgroup (idle but for the thread that issues TMA) copying
// slabs of k just ahead of the tiles' TMA loads: 293 us with all of the copy inside, 276 us with its first half done
// before, against 260 us with the copy as a launch of its own (4096^3: 207 us); the copy inside cost the product
// twice its time alone, sharing L2 with TMA loads that already draw ~7.5 TB/s from it (48 KB per k step of each
// 128 x 256 tile, a step every ~0.8 us on each of 132 SMs). The product launched as a programmatic dependent of the
// copy (its blocks set up while the copy's last ones run): no measurable gain (258.7 us against 256.3). Reading the
// unaligned rows where they are in other ways (against 255 us with both inputs copied): the producer's 128
// threads loading each step's tile in 16-byte pieces, shifting them in registers and storing them swizzled took
// 599 us with A so read (B copied), 935 with B, 1310 with both (registers hold one step's loads, so every step waited
// a round trip through L2); the eight maps per input with the offset left in boxes 8 columns wider and undone by
// three producer warps in shared memory took 545 us with A, 732 with B, 1018 with both (the raw boxes alone 323 us,
// shifting 16 KB per step ~220 us more).
// The epilogue of 9-12: each consumer warpgroup writes its accumulators, rounded, into 64 x 64 boxes of shared
// memory, which TMA stores into C while the warpgroup goes on to its next tile (store_block_tma in
// matmul_hopper.cuh); where TMA cannot write C (its rows not 16-byte aligned, or A read by residue maps), the
// warpgroup copies the boxes out itself (store_block_staged). Both replaced version 8's epilogue, which shuffles the
// accumulators into 16-byte pieces in registers: 16384 x 1024 x 1024 went from 0.78 to 0.93 of torch.matmul.
// Any M, N, K is correct: TMA reads zeros past the edges, and the stores are guarded. A build without sm_90a
// (TORCH_CUDA_ARCH_LIST=9.0 rather than 9.0a) compiles these kernels to a trap and matmul_hopper_available() says no.
//
// This file holds version 8, the launchers and the choice; the pieces (TMA, mbarrier, wgmma, the epilogue), the
// warp-specialized kernel of 9-12 and the tensor maps are in matmul_hopper.cuh, and the ring's bookkeeping in
// matmul_ring.h.
#include <algorithm>  // std::min, std::max
#include <cstdlib>  // getenv, atoi: the sweep build's split count

#include "matmul_hopper.cuh"

// Whether the device code for this GPU has the Hopper kernels: a variable set per compiled architecture, read
// once per device (matmul_hopper_available).
__device__ int matmul_hopper_built =
#ifdef LABKIT_SM90A
    1;
#else
    0;
#endif

namespace {

// ----------------------------------------------------------------------------------------------
// 8. One warpgroup does everything. Per block: a 128 x 128 tile of C, a ring of kStages8 slots of (A 128 x 64,
// B 64 x 128) = 32 KB each. Thread 0 keeps the ring kStages8 - 1 steps ahead; after each step every thread has
// waited for its wgmmas (wait_group 0) and the block meets at __syncthreads, so the slot read in this step is free
// for the copy issued at the start of the next one.

constexpr int kStages8 = 4;
constexpr int kSmem8 = kStages8 * (kTileBytesA + 2 * kStripBytes) + 1024;

template <typename T>
__global__ void __launch_bounds__(kWarpgroup)
    matmul_tma_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, T* c,
                            int64_t M, int64_t N, int64_t K) {
#ifndef LABKIT_SM90A
    __trap();  // built without sm_90a: the launcher never runs this (matmul_hopper_available)
#else
    extern __shared__ uint8_t raw_smem[];
    uint8_t* smem = aligned_smem(raw_smem);
    T* sA = reinterpret_cast<T*>(smem);                                   // kStages8 x (128 x 64)
    T* sB = reinterpret_cast<T*>(smem + kStages8 * kTileBytesA);          // kStages8 x (2 strips of 64 x 64)
    __shared__ __align__(8) uint64_t full[kStages8];
    const int t = threadIdx.x;
    const int row0 = blockIdx.y * kHM, col0 = blockIdx.x * 128;
    const int steps = int((K + kBK - 1) / kBK);
    if (t == 0) {
        for (int s = 0; s < kStages8; s++) bar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to TMA's completions
    }
    __syncthreads();
    auto issue = [&](int step) {  // thread 0: the tiles of k step `step` into its slot
        const int s = step % kStages8;
        bar_expect_bytes(&full[s], kTileBytesA + 2 * kStripBytes);
        tma_load(sA + s * kHM * kBK, &map_a, step * kBK, row0, &full[s]);
        for (int j = 0; j < 2; j++)
            tma_load(sB + (s * 2 + j) * kBK * kStrip, &map_b, col0 + j * kStrip, step * kBK, &full[s]);
    };
    if (t == 0)
        for (int step = 0; step < kStages8 - 1 && step < steps; step++) issue(step);
    float d[2][64] = {};  // rows 0-63 and 64-127 of the tile, 64 x 128 floats each over the warpgroup
    for (int step = 0; step < steps; step++) {
        if (t == 0 && step + kStages8 - 1 < steps) issue(step + kStages8 - 1);
        const int s = step % kStages8;
        bar_wait(&full[s], (step / kStages8) % 2);
        wgmma_fence();
#pragma unroll
        for (int h = 0; h < 2; h++)
            multiply_slot<T, 128>(d[h], sA + s * kHM * kBK + h * 64 * kBK, sB + s * 2 * kBK * kStrip);
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();  // every thread is done with slot s before thread 0 refills it
    }
#pragma unroll
    for (int h = 0; h < 2; h++) store_block<T, 128>(c, d[h], row0 + h * 64, 1, col0, M, N);
#endif
}

// ----------------------------------------------------------------------------------------------
// Launchers (the warp-specialized kernel's: launch_ws in matmul_hopper.cuh).

// The output tile of each version: rows, for the tensor map of A.
constexpr int tile_rows(int version) { return version == kMatmulTall ? 256 : 128; }

// Split-K in 16 bits: its plan, how many ranges of k and on which tiles, a block per tile and range: 128 x 128 on one
// consumer warpgroup (version 9's kernel) or 128 x 256 on two (version 10's). Only where 128 x 128 tiles fill at most
// half the SMs (past that, versions 9-12 fill them better without partial products: matmul_hopper_choice); then the
// tiles and count of the lowest matmul_split_cost, for kernels that hold one block per SM (their rings take 160 and
// 192 KB of shared memory), ranges at least 256 deep (4 steps of the ring). In steps of k of a wave of 128 x 128
// blocks, a wave of 128 x 256 ones takes 1.13 (twice the columns on twice the warpgroups) and a partial product of
// 2^18 floats ~88. Those figures, and the plan's choices, from the H200 (2026-12-04, results/2026-12-04-nvidia-h200/
// matmul-variants-splitk.json, bfloat16, M x K x N; float16 alike): 512 x 8192 x 512 on 128 x 128 tiles 42.0, 28.6,
// 23.0, 28.8 and 42.2 us with 2, 4, 8, 16 and 32 ranges, on 128 x 256 ones 49.8, 31.7, 24.0, 23.9 and 34.6 (the plan:
// 128 x 128, 8), against 67.9 uncut and 18.0 for torch.matmul; 1024 x 8192 x 1024 on 128 x 128 tiles 43.5, 49.6 and
// 61.9 us with 2, 4 and 8, on 128 x 256 ones 53.5, 40.3 and 50.9 (the plan: 128 x 256, 4), 69.0 uncut, 30.9 for
// torch.matmul; 1024^3 17.0 us with 2 against 18.0 uncut (the plan: uncut, a near tie that the model, blind to a
// block's fixed costs, calls the other way). A build with LABKIT_MATMUL_SWEEP takes the count from
// $LABKIT_MATMUL_SWEEP_SPLITS and the tiles' width from $LABKIT_MATMUL_SWEEP_SPLIT_TILE where they are set
// (scripts/experiment_matmul_variants.py).
struct SplitPlan { int splits, tile_n; };

SplitPlan split_plan(int64_t M, int64_t N, int64_t K, int device) {
#ifdef LABKIT_MATMUL_SWEEP
    const char *forced = getenv("LABKIT_MATMUL_SWEEP_SPLITS"), *tile = getenv("LABKIT_MATMUL_SWEEP_SPLIT_TILE");
    if (forced) return {atoi(forced), tile && atoi(tile) == 256 ? 256 : 128};
#endif
    const int64_t sms = sm_count(device);
    if (cdiv(M, 128) * cdiv(N, 128) * 2 > sms) return {1, 128};
    SplitPlan best{1, 128};
    double best_cost = 0;
    for (const int tile_n : {128, 256}) {
        const int64_t tiles = cdiv(M, 128) * cdiv(N, tile_n);
        const double step = tile_n == 128 ? 1.0 : 1.13;
        const int splits = matmul_split_rule(tiles, sms, M, N, K, 256, step, 88.0);
        const double cost = matmul_split_cost(tiles, sms, M, N, K, splits, step, 88.0);
        if (splits > 1 && (best.splits == 1 || cost < best_cost)) best = {splits, tile_n}, best_cost = cost;
    }
    return best;
}

template <typename T>
cudaError_t launch_split(const AMaps& map_a, const CUtensorMap& map_b, T* c, int64_t M, int64_t N, int64_t K,
                         int device, cudaStream_t stream, float* parts, int splits) {
    if (splits > 1 && split_plan(M, N, K, device).tile_n == 256)
        return launch_ws<T, 128, 256, 2, false>(map_a, map_b, c, M, N, K, device, stream, nullptr, parts, splits);
    return launch_ws<T, 128, 128, 1, false>(map_a, map_b, c, M, N, K, device, stream, nullptr, parts, splits);
}

template <typename T>
cudaError_t launch_hopper(int version, T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, int64_t lda,
                          int64_t ldb, int device, cudaStream_t stream, float* parts, int splits) {
    AMaps map_a;
    CUtensorMap map_b;
    if (!make_a_maps(&map_a, a, M, K, lda, tile_rows(version)) || !make_map(&map_b, b, K, N, ldb, kBK))
        return cudaErrorInvalidValue;
    switch (version) {
        case kMatmulWgmma: {  // one map of A: version 8 reads no residue maps (matmul_reads_a_by_residue)
            if (map_a.residues != 1) return cudaErrorInvalidValue;
            const dim3 grid(unsigned(cdiv(N, 128)), unsigned(cdiv(M, kHM)));
            return launch<matmul_tma_wgmma_kernel<T>>(kWarpgroup, kSmem8, grid, device, stream, map_a.map[0], map_b, c,
                                                      M, N, K);
        }
        case kMatmulSplitK: return launch_split(map_a, map_b, c, M, N, K, device, stream, parts, splits);
        case kMatmulWarpSpec: return launch_ws<T, 128, 128, 1, false>(map_a, map_b, c, M, N, K, device, stream);
        case kMatmulWide: return launch_ws<T, 128, 256, 2, false>(map_a, map_b, c, M, N, K, device, stream);
        case kMatmulPersistent: return launch_ws<T, 128, 256, 2, true>(map_a, map_b, c, M, N, K, device, stream);
        default: return launch_ws<T, 256, 128, 2, true>(map_a, map_b, c, M, N, K, device, stream);  // kMatmulTall
    }
}

}  // namespace

bool matmul_hopper_available(int device) { return hopper_ready(device, &matmul_hopper_built); }

bool matmul_tma_readable(const void* p, int64_t row_stride) { return row_stride % 8 == 0 && aligned16(p); }

bool matmul_reads_a_by_residue(int version, int64_t M) {
    return ((version >= kMatmulWarpSpec && version <= kMatmulTall) || version == kMatmulSplitK) &&
           residue_maps_fit(M, tile_rows(version));
}

// The work of the busiest block of a persistent kernel with kM x kN tiles on `sms` SMs, in full tiles (a
// 128 x 256 tile and a 256 x 128 one take about as long): its full tiles, and for a block with one fewer, the
// narrow tiles TileWalk gives it (a 64-column strip of kNarrowTiles tile rows: that many times 64 / kN of a full
// tile's work).
template <int kM, int kN>
static double busiest_block(int64_t M, int64_t N, int sms) {
    using S = WsShape<kM, kN, 2, true>;
    const TileWalk<kN, S::kNarrowTiles> walk(1, int(cdiv(M, kM)), N, sms);
    const int64_t most = cdiv(walk.full, sms), fewer = walk.full / sms;
    const double narrow = double(cdiv(walk.slivers, walk.shorts)) * S::kNarrowTiles * kStrip / kN;
    return std::max(double(most), (walk.first_short == 0 ? double(most) : double(fewer)) + narrow);
}

int matmul_hopper_choice(int64_t M, int64_t N, int device) {
    const int sms = sm_count(device);
    const int64_t wide = cdiv(M, 128) * cdiv(N, 256);
    if (wide * 2 < sms) return kMatmulWarpSpec;  // too few 128 x 256 tiles: 128 x 128 ones fill twice the SMs
    if (wide <= sms) return kMatmulWide;  // one wave
    // several waves: the tile shape whose busiest block has less to do (4096 x 4224: 17 x 32 wide tiles are 5 for
    // some of 132 SMs, 33 x 16 tall ones exactly 4 each); 128 x 256 where they tie (measured faster on an H200 at
    // 4096^3: 204 us against 211)
    const double on_wide = busiest_block<128, 256>(M, N, sms), on_tall = busiest_block<256, 128>(M, N, sms);
    return on_tall < on_wide - 0.01 ? kMatmulTall : kMatmulPersistent;
}

int matmul_hopper_splits(int64_t M, int64_t N, int64_t K, int device) { return split_plan(M, N, K, device).splits; }

// ----------------------------------------------------------------------------------------------
// The copy for inputs TMA cannot read as they are: a job's dst rows (ld_dst elements apart, a multiple of 8, 16-byte
// aligned) get its src rows (ld_src apart, any 2-byte alignment), 16-bit elements; where both A and B need it, their
// copies are the two halves of one launch (blockIdx.y), so that neither waits for the other's last blocks. A copy
// moves bytes and nothing else, so what matters is moving them in 16-byte pieces: a thread writes aligned 16-byte
// packs of dst (8 elements each) and reads the two aligned 16-byte pieces of src that hold a pack's 8 elements (they
// start e elements into the first, e = 0-7 where the row's alignment puts them), then shifts the 32 bytes right by
// e elements. The neighbouring thread reads the same second piece: from L1, not DRAM. Past the row's end the pack
// holds whatever the pieces held: TMA reads only the first `cols` columns (the tensor map's width). The pieces of the
// matrix's very end, which may stick out of its allocation, are read element by element instead.
// The source is read once, so its loads are marked streaming (evict first): the padded copy the matmul reads next
// is what L2 (50 MB on an H200) should keep. A block copies a row, each thread four packs of it with all their loads
// in flight before the first store, in as many warps as the widest row needs for one pass (4097 columns: 513 packs,
// 5 warps). At 4093 x 4097 the copy reads and writes 67 MB: ~16 us at a copy's ~4.3 TB/s. Measured on an H200
// (the profiler's kernel time): 17.2 us with four packs per thread against 17.4-17.5 with two (2026-12-04,
// results/2026-12-04-nvidia-h200/matmul-narrow-tiles.json); with two, 35.0 us for both inputs of 4095 x 4097 x 4093,
// where a block of 256 threads per 2048 columns, one pack per thread, took 19.0 and 36.4 (2026-12-03).
// Pack p of a row (src_row: the row's start) in two halves, so that a thread has the loads of all its packs in
// flight before it waits for the first: load() reads the two aligned pieces that hold its 8 elements, value() shifts
// them into place.
struct PadPack {
    uint4 lo, hi;
    int e;  // elements into the first aligned piece
    bool one_by_one;  // at the matrix's very end: read element by element, none past it

    __device__ __forceinline__ void load(const uint16_t* src_row, int64_t p, int64_t cols, uintptr_t end) {
        const uint16_t* from = src_row + p * 8;
        const uintptr_t at = reinterpret_cast<uintptr_t>(from);
        e = int(at % 16) / 2;
        const bool more = e != 0 && p * 8 + 8 - e < cols;  // the second piece holds one of the row's
        one_by_one = at - at % 16 + (more ? 32 : 16) > end;
        if (one_by_one) {
            uint16_t v[8];
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] = p * 8 + j < cols ? from[j] : 0;
            lo = make_uint4(v[0] | uint32_t(v[1]) << 16, v[2] | uint32_t(v[3]) << 16, v[4] | uint32_t(v[5]) << 16,
                            v[6] | uint32_t(v[7]) << 16);
            return;
        }
        const uint4* piece = reinterpret_cast<const uint4*>(at - at % 16);
        lo = __ldcs(piece);  // holds elements p * 8 ... p * 8 + 7 - e
        hi = more ? __ldcs(piece + 1) : make_uint4(0, 0, 0, 0);
    }

    // elements e .. e + 7 of the 32 bytes
    __device__ __forceinline__ uint4 value() const {
        if (one_by_one) return lo;
        const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        return elements_from(w, e);
    }
};

// A block per row (blockIdx.x, and on by gridDim.x), each thread kPadPacks packs of it blockDim.x apart: all their
// loads in flight before the first store.
constexpr int kPadPacks = 4;
__global__ void matmul_pad_rows_kernel(MatmulPadJob job0, MatmulPadJob job1) {
    const MatmulPadJob& job = blockIdx.y == 0 ? job0 : job1;
    uint4* dst = static_cast<uint4*>(job.dst);
    const uint16_t* src = static_cast<const uint16_t*>(job.src);
    const int64_t rows = job.rows, cols = job.cols, ld_src = job.ld_src, ld_dst = job.ld_dst;
    const int64_t packs = (cols + 7) / 8;
    // the matrix's end: a piece reaching past it may reach past its allocation (the last row's last pieces)
    const uintptr_t end = reinterpret_cast<uintptr_t>(src + (rows - 1) * ld_src + cols);
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const uint16_t* src_row = src + r * ld_src;
        uint4* dst_row = dst + (r * ld_dst) / 8;
        for (int64_t p0 = threadIdx.x; p0 < packs; p0 += int64_t(kPadPacks) * blockDim.x) {
            PadPack pack[kPadPacks];
#pragma unroll
            for (int u = 0; u < kPadPacks; u++) {
                const int64_t p = p0 + int64_t(u) * blockDim.x;
                if (p < packs) pack[u].load(src_row, p, cols, end);
            }
#pragma unroll
            for (int u = 0; u < kPadPacks; u++) {
                const int64_t p = p0 + int64_t(u) * blockDim.x;
                if (p < packs) dst_row[p] = pack[u].value();
            }
        }
    }
}

cudaError_t matmul_pad_rows(const MatmulPadJob* jobs, int count, cudaStream_t stream) {
    MatmulPadJob todo[2] = {};
    int n = 0;
    int64_t packs = 0, rows = 0;
    for (int i = 0; i < count; i++) {
        if (jobs[i].rows == 0 || jobs[i].cols == 0) continue;
        todo[n++] = jobs[i];
        packs = std::max(packs, cdiv(jobs[i].cols, 8));
        rows = std::max(rows, jobs[i].rows);
    }
    if (n == 0) return cudaSuccess;
    // threads enough for the widest row in one pass, in whole warps, at most 1024
    const int threads = int(std::min<int64_t>(cdiv(cdiv(packs, kPadPacks), 32) * 32, 1024));
    const dim3 grid(unsigned(std::min<int64_t>(rows, int64_t(1) << 30)), unsigned(n));
    matmul_pad_rows_kernel<<<grid, threads, 0, stream>>>(todo[0], todo[1]);
    return cudaGetLastError();
}

cudaError_t matmul_hopper(int version, DType dtype, void* c, const void* a, const void* b, int64_t M, int64_t N,
                          int64_t K, int64_t lda, int64_t ldb, int device, cudaStream_t stream, float* parts,
                          int splits) {
    if (dtype == DType::f16)
        return launch_hopper(version, (__half*)c, (const __half*)a, (const __half*)b, M, N, K, lda, ldb, device, stream,
                             parts, splits);
    return launch_hopper(version, (__nv_bfloat16*)c, (const __nv_bfloat16*)a, (const __nv_bfloat16*)b, M, N, K, lda,
                         ldb, device, stream, parts, splits);
}
