// sum.cu: the sum of a tensor's elements (or of each row) on the GPU: the smallest kernel whose threads must
// work together. Every element is read once and one number comes out, so a sum is bound by reading memory,
// like a copy with no writes: at ~4 TB/s an H200 reads 2^24 floats (64 MB) in ~16 us. The hard part is
// combining the partial sums of ~250,000 threads without making them wait on each other.
//
// Versions, simplest first (ops.sum(x, version=...) runs 1-4: float32, the whole tensor; ops.sum(x) runs 5):
//   1. sum_atomic_kernel       every thread atomicAdd()s its element into the one result. Correct, and as
//                              slow as the memory system can serialise adds to one address (~1 per ns);
//                              the order of the adds changes from run to run, so the last bits do too.
//   2. sum_interleaved_kernel  each block adds its 256 elements as a tree in shared memory, halving the
//                              active threads each step (Mark Harris, "Optimizing Parallel Reduction in
//                              CUDA", kernel 1): thread tid works while tid % (2*stride) == 0, so in every
//                              warp only some lanes work and the others wait: divergence. One partial sum
//                              per block; the same kernel then sums the partials, until one is left.
//   3. sum_sequential_kernel   the same tree, but the active threads are the first `stride` (Harris 3):
//                              whole warps work or idle together, and consecutive threads touch consecutive
//                              shared-memory words (no bank conflicts).
//   4. sum_warp_kernel         3, but the last 32 values are added inside one warp with __shfl_down_sync:
//                              registers to registers, no shared memory and no __syncthreads() (Harris 6's
//                              idea, with the shuffles CUDA has had since Kepler).
//   5. sum_rows_kernel         what ops.sum runs. Few blocks, each reading many elements with 16-byte loads,
//                              4 loads in flight per thread, into registers; one partial per block (warp
//                              shuffles, then one shared-memory step); sum_rows_finish_kernel adds the
//                              partials in a fixed order. No atomics: the same input gives the same bits on
//                              every run. Rows of a 2-D sum get a block each (split further when there are
//                              few long rows), or a warp each when they are short (sum_rows_warp_kernel).
// Versions 2-4 read one element per thread and write one partial per 256 elements: their time goes to the
// tree, not to memory. Version 5 keeps the tree for the end, once per ~100,000 elements.
#include <type_traits>

#include "cuda_types.cuh"
#include "sum.h"

// What a sum of T is accumulated in: float for float and the 16-bit types, double for double.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

constexpr unsigned kFullWarp = 0xffffffffu;  // every lane takes part in the shuffle
constexpr int kThreads = 256;                // versions 1-4

// The sum of v over the 32 lanes of a warp, in lane 0: each step adds the value `offset` lanes up, halving
// the distance: 16, 8, 4, 2, 1. Five steps, no memory.
template <typename A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullWarp, v, offset);
    return v;
}

// The sum of v over the block, in thread 0: each warp's sum, then warp 0 adds the (at most 32) warp sums.
// The barrier is what makes warp 0 wait until every warp has written its sum.
template <typename A>
__device__ __forceinline__ A block_sum(A v) {
    __shared__ A warp_sums[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : A(0));
    return v;
}

// ----------------------------------------------------------------------------------------------
// Versions 1-4: float32, one element per thread.

// 1. One atomic add per element.
__global__ void sum_atomic_kernel(float* out, const float* x, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

// 2. Interleaved addressing. Step `stride` adds s[tid + stride] into s[tid] for tid a multiple of 2*stride:
// with stride 1 the even lanes work, with 2 every 4th, ... while the rest of each warp waits.
__global__ void sum_interleaved_kernel(float* partial, const float* x, int64_t n) {
    extern __shared__ float s[];
    const unsigned tid = threadIdx.x;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();  // every element in shared memory before anyone reads a neighbour's
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
        __syncthreads();  // this step's sums written before the next step reads them
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

// 3. Sequential addressing: the first `stride` threads add the upper half onto the lower half.
__global__ void sum_sequential_kernel(float* partial, const float* x, int64_t n) {
    extern __shared__ float s[];
    const unsigned tid = threadIdx.x;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

// 4. Sequential addressing down to 64 values, then one warp: 64 -> 32 in shared memory, 32 -> 1 by shuffles.
__global__ void sum_warp_kernel(float* partial, const float* x, int64_t n) {
    extern __shared__ float s[];
    const unsigned tid = threadIdx.x;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 32; stride /= 2) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        const float v = warp_sum(s[tid] + s[tid + 32]);
        if (tid == 0) partial[blockIdx.x] = v;
    }
}

// ----------------------------------------------------------------------------------------------
// Version 5: what ops.sum runs, for every dtype and for rows.

constexpr int kUnroll = 4;  // 16-byte loads in flight per thread: 4 x 16 B x 2048 threads = 128 KB per SM

// The sum of slice `split` (of `splits`, each `chunk` elements, a multiple of the pack) of row blockIdx.x /
// splits. kVec: the row starts 16-byte aligned, so whole packs are read; else one element at a time.
// One result per block: into out[row] when the row is not split, else into partial[blockIdx.x].
template <typename T, bool kVec>
__global__ void sum_rows_kernel(T* out, acc_t<T>* partial, const T* x, int64_t cols, int64_t splits, int64_t chunk) {
    using A = acc_t<T>;
    const int64_t row = blockIdx.x / splits, split = blockIdx.x % splits;
    const T* xr = x + row * cols;
    const int64_t begin = split * chunk, end = begin + chunk < cols ? begin + chunk : cols;
    A acc[kUnroll] = {};
    int64_t rest = begin;  // where the element-by-element part starts
    if constexpr (kVec) {
        constexpr int N = Pack16<T>::N;
        const Pack16<T>* p = reinterpret_cast<const Pack16<T>*>(xr + begin);
        const int64_t packs = (end - begin) / N, step = int64_t(blockDim.x) * kUnroll;
        int64_t k = threadIdx.x;
        for (; k + (kUnroll - 1) * blockDim.x < packs; k += step) {
            Pack16<T> v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++) v[u] = p[k + u * blockDim.x];  // all loads first, then the adds
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
#pragma unroll
                for (int j = 0; j < N; j++) acc[u] += ld(v[u].v[j]);
        }
        for (; k < packs; k += blockDim.x) {
            const Pack16<T> v = p[k];
#pragma unroll
            for (int j = 0; j < N; j++) acc[0] += ld(v.v[j]);
        }
        rest = begin + packs * N;
    }
    for (int64_t i = rest + threadIdx.x; i < end; i += blockDim.x) acc[0] += ld(xr[i]);
    static_assert(kUnroll == 4, "the accumulators are added as a tree of 4");
    const A v = block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
    if (threadIdx.x == 0) {
        if (splits == 1) st(&out[row], v);
        else partial[blockIdx.x] = v;
    }
}

// The second pass: one warp per row adds the row's `splits` partials, lane by lane, then across the warp.
// A fixed order, so the same bits every run. Whole warps leave together (rows are whole warps), so every
// lane that shuffles is there.
template <typename T>
__global__ void sum_rows_finish_kernel(T* out, const acc_t<T>* partial, int64_t rows, int64_t splits) {
    const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    acc_t<T> v = 0;
    for (int64_t s = lane; s < splits; s += 32) v += partial[row * splits + s];
    v = warp_sum(v);
    if (lane == 0) st(&out[row], v);
}

// Short rows: a warp per row, 8 rows per block; each lane reads every 32nd pack of its row, two at a time.
template <typename T, bool kVec>
__global__ void sum_rows_warp_kernel(T* out, const T* x, int64_t rows, int64_t cols) {
    using A = acc_t<T>;
    const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    A acc0 = 0, acc1 = 0;
    int64_t rest = 0;
    if constexpr (kVec) {
        constexpr int N = Pack16<T>::N;
        const Pack16<T>* p = reinterpret_cast<const Pack16<T>*>(xr);
        const int64_t packs = cols / N;
        int64_t k = lane;
        for (; k + 32 < packs; k += 64) {
            const Pack16<T> v0 = p[k], v1 = p[k + 32];
#pragma unroll
            for (int j = 0; j < N; j++) {
                acc0 += ld(v0.v[j]);
                acc1 += ld(v1.v[j]);
            }
        }
        if (k < packs) {
            const Pack16<T> v = p[k];
#pragma unroll
            for (int j = 0; j < N; j++) acc0 += ld(v.v[j]);
        }
        rest = packs * N;
    }
    for (int64_t i = rest + lane; i < cols; i += 32) acc0 += ld(xr[i]);
    const A v = warp_sum(acc0 + acc1);
    if (lane == 0) st(&out[row], v);
}

// ----------------------------------------------------------------------------------------------
// Launchers: sizes come from the shape and the GPU's SM count (queried, never a constant for one GPU);
// every launch is checked.

static int sm_count(int device) {
    return per_device(device, [device] { return device_attribute(cudaDevAttrMultiProcessorCount, device, 1); });
}

// How a sum of rows x cols runs: a warp per row for short rows; else `threads` per block and each row in
// `splits` slices of `chunk` elements. Enough blocks for ~4 full waves of the GPU (2048 threads per SM), so
// the last wave's idle SMs cost little; no slice shorter than 4 packs per thread.
struct SumPlan {
    bool warp_per_row;
    int threads;
    int64_t splits, chunk;
};

// Blocks of kThreads threads of sum_rows_kernel<T> that fit on one SM at once (registers decide: 4 loads in flight
// take ~40 registers a thread), asked of CUDA once per device (and per T and kThreads: each is a cache of its own).
template <typename T, int kThreads>
static int resident_blocks(int device) {
    return per_device(device, [] {  // of the current device: the binding's guard made it `device`
        int n = 0;
        const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, sum_rows_kernel<T, true>, kThreads, 0);
        return query_result(e, n, 1);
    });
}

template <typename T>
static SumPlan sum_plan(int64_t rows, int64_t cols, int device) {
    constexpr int N = Pack16<T>::N;
    const int64_t packs = cdiv(cols, N);
    if (packs <= 4 * 32) return {true, 256, 1, cols};
    if (rows == 1) {
        // The whole tensor: exactly one wave of blocks (all on the GPU at once, none waiting for a free SM), each
        // a slice of whole unrolled steps, so every thread keeps 4 loads in flight to the end of its slice.
        constexpr int threads = 512;
        const int64_t step = int64_t(threads) * kUnroll * N;  // elements one step of a block reads
        const int64_t wave = int64_t(sm_count(device)) * resident_blocks<T, threads>(device);
        const int64_t chunk = cdiv(cdiv(cols, wave), step) * step;
        return {false, threads, cdiv(cols, chunk), chunk};
    }
    int threads = 64;
    while (threads < 512 && threads * kUnroll < packs) threads *= 2;
    const int64_t target_blocks = int64_t(4) * sm_count(device) * (2048 / threads);
    int64_t splits = cdiv(target_blocks, rows);
    const int64_t most = cdiv(packs, int64_t(threads) * kUnroll);
    splits = splits < 1 ? 1 : (splits > most ? most : splits);
    const int64_t chunk = cdiv(cdiv(cols, splits), N) * N;  // whole packs, so every slice starts aligned
    return {false, threads, cdiv(cols, chunk), chunk};
}

int64_t sum_rows_workspace_bytes(DType dtype, int64_t rows, int64_t cols, int device) {
    return dispatch_dtype(dtype, [&](auto* type) -> int64_t {
        using T = std::remove_pointer_t<decltype(type)>;
        const SumPlan plan = sum_plan<T>(rows, cols, device);
        return plan.splits > 1 ? rows * plan.splits * int64_t(sizeof(acc_t<T>)) : 0;
    });
}

cudaError_t sum_rows_cuda(DType dtype, void* out, const void* x, int64_t rows, int64_t cols, void* workspace,
                          int device, cudaStream_t stream) {
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        T* out_ = static_cast<T*>(out);
        const T* x_ = static_cast<const T*>(x);
        // whole packs only if every row starts on 16 bytes: the first does, and each row is 16-byte long
        const bool vec = aligned16(x) && (rows == 1 || (cols * int64_t(sizeof(T))) % 16 == 0);
        const SumPlan plan = sum_plan<T>(rows, cols, device);
        if (plan.warp_per_row) {
            const int64_t blocks = cdiv(rows * 32, plan.threads);
            if (vec) sum_rows_warp_kernel<T, true><<<blocks, plan.threads, 0, stream>>>(out_, x_, rows, cols);
            else sum_rows_warp_kernel<T, false><<<blocks, plan.threads, 0, stream>>>(out_, x_, rows, cols);
            return cudaGetLastError();
        }
        auto* partial = static_cast<acc_t<T>*>(workspace);
        const int64_t blocks = rows * plan.splits;
        if (vec) {
            sum_rows_kernel<T, true>
                <<<blocks, plan.threads, 0, stream>>>(out_, partial, x_, cols, plan.splits, plan.chunk);
        } else {
            sum_rows_kernel<T, false>
                <<<blocks, plan.threads, 0, stream>>>(out_, partial, x_, cols, plan.splits, plan.chunk);
        }
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess || plan.splits == 1) return err;
        sum_rows_finish_kernel<T><<<cdiv(rows * 32, 256), 256, 0, stream>>>(out_, partial, rows, plan.splits);
        return cudaGetLastError();
    });
}

// Versions 1-4. 2-4 write one partial per block and run again on the partials until one is left: pass k
// reads the previous pass's partials and writes its own after them in the workspace.
int64_t sum_version_workspace_bytes(int version, int64_t n) {
    if (version == 1) return 0;
    int64_t floats = 0;
    for (int64_t count = cdiv(n, kThreads); count > 1; count = cdiv(count, kThreads)) floats += count;
    return floats * int64_t(sizeof(float));
}

cudaError_t sum_version_cuda(int version, float* out, const float* x, int64_t n, float* workspace,
                             cudaStream_t stream) {
    if (version == 1) {
        cudaError_t err = cudaMemsetAsync(out, 0, sizeof(float), stream);
        if (err != cudaSuccess) return err;
        sum_atomic_kernel<<<cdiv(n, kThreads), kThreads, 0, stream>>>(out, x, n);
        return cudaGetLastError();
    }
    auto* kernel = version == 2 ? sum_interleaved_kernel : version == 3 ? sum_sequential_kernel : sum_warp_kernel;
    const float* in = x;
    float* next = workspace;
    for (int64_t count = n;;) {
        const int64_t blocks = cdiv(count, kThreads);
        float* dst = blocks == 1 ? out : next;
        kernel<<<blocks, kThreads, kThreads * sizeof(float), stream>>>(dst, in, count);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess || blocks == 1) return err;
        in = dst;
        next = dst + blocks;
        count = blocks;
    }
}
