// nms.cu: non-maximum suppression on the GPU, the bitmask way (torchvision's, from Faster R-CNN's CUDA code).
//
// The CPU loop (nms_cpu.cpp) is sequential: whether box i is kept depends on every box before it. The trick is to
// split the work into a part that is not sequential, and is almost all of the arithmetic, and a part that is, and
// is cheap:
//   1. nms_mask_kernel: every overlap test, all at once. Boxes are taken 64 at a time, in score order. Block
//      (col, row) compares the 64 boxes of row block `row` with the 64 of column block `col` (staged in shared
//      memory) and thread t writes one 64-bit word: bit j set when box row*64 + t overlaps box col*64 + j by more
//      than the threshold. Only col >= row matters (a box is suppressed by higher-scored boxes only), so the lower
//      blocks return at once; on the diagonal only j > t is tested. The mask is n x words 64-bit words, words =
//      ceil(n / 64): row i, word w holds box i's verdict on boxes 64w .. 64w + 63.
//   2. nms_reduce_kernel: the sequential walk, over words instead of boxes. `removed` (one bit per box, in shared
//      memory) starts empty. For each 64-box block b in order: warp 0 settles the block's own boxes one by one,
//      entirely in registers: box j is kept when its bit in removed is clear, and then ORs in its diagonal word
//      (its verdict on boxes j+1 .. 63 of the block); 64 steps of a shuffle and an OR. Then all threads OR the
//      kept boxes' rows into the removed words of the later blocks (one word per thread, coalesced). n / 64 steps,
//      two barriers each.
// torchvision copies the mask to the host and does step 2 there: n^2 / 8 bytes over PCIe (12.5 MB for 10,000 boxes,
// ~1 ms) and a host loop, with the GPU idle. Here step 2 stays on the GPU, in one block; the only copy back is the
// kept count (8 bytes), which the caller needs to size the output.
//
// Napkin math (H200, 10,000 boxes): step 1 is 50 M overlap tests (~20 flops each): ~1 GFLOP, microseconds of the
// GPU's time; it writes the 12.5 MB mask, which stays in the 50 MB L2. Step 2 is 157 blocks; each step waits on a
// few dependent loads from L2 (~1 us with the barriers): ~0.2 ms. One block works while the other 131 SMs idle:
// the sequential part is what it costs; it is small because each of its steps settles 64 boxes.
#include <type_traits>

#include "cuda_types.cuh"
#include "nms.h"

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

constexpr int kBoxesPerWord = 64;  // bits in a mask word: the mask kernel's block size, and the walk's step
constexpr int kReduceThreads = 256;
constexpr unsigned kFullWarp = 0xffffffffu;

// r() of nms.h: a round trip through the 16-bit type (torchvision's CUDA kernel rounds there), else nothing.
template <typename T>
struct Round {
    __device__ __forceinline__ acc_t<T> operator()(acc_t<T> v) const {
        if constexpr (sizeof(T) == 2) {
            T t;
            st(&t, v);
            return ld(t);
        } else {
            return v;
        }
    }
};

template <typename T>
__device__ __forceinline__ Box4<acc_t<T>> load_box(const T* boxes, int64_t index) {
    const T* b = boxes + index * 4;
    return {ld(b[0]), ld(b[1]), ld(b[2]), ld(b[3])};
}

// ----------------------------------------------------------------------------------------------
// 1. The mask: block (col, row), thread t: box row*64 + t (in score order) against the 64 boxes of block col.

template <typename T>
__global__ void nms_mask_kernel(uint64_t* __restrict__ mask, const T* __restrict__ boxes,
                                const int64_t* __restrict__ order, int64_t n, int64_t words, float threshold) {
    using A = acc_t<T>;
    const int64_t row = blockIdx.y, col = blockIdx.x;
    if (row > col) return;  // a box is only ever suppressed by a higher-scored one
    const int64_t rows = min(int64_t(kBoxesPerWord), n - row * kBoxesPerWord);
    const int64_t cols = min(int64_t(kBoxesPerWord), n - col * kBoxesPerWord);
    __shared__ Box4<A> col_box[kBoxesPerWord];
    __shared__ A col_area[kBoxesPerWord];
    const Round<T> r;
    const int t = threadIdx.x;
    if (t < cols) {
        col_box[t] = load_box(boxes, order[col * kBoxesPerWord + t]);  // the boxes are read in score order
        col_area[t] = box_area(col_box[t], r);
    }
    __syncthreads();
    if (t >= rows) return;
    const int64_t i = row * kBoxesPerWord + t;
    const Box4<A> a = load_box(boxes, order[i]);
    const A area_a = box_area(a, r);
    uint64_t bits = 0;
    for (int j = (row == col ? t + 1 : 0); j < cols; j++) {
        // compared with the threshold as a float, as torchvision's CUDA kernel does (its CPU kernel: as a double)
        if (overlaps(a, area_a, col_box[j], col_area[j], threshold, r)) bits |= uint64_t(1) << j;
    }
    mask[i * words + col] = bits;
}

// ----------------------------------------------------------------------------------------------
// 2. The walk, in one block. removed[w] (shared) holds bit j for box 64w + j once a kept box suppresses it.

__global__ void nms_reduce_kernel(int64_t* __restrict__ keep, int64_t* __restrict__ count,
                                  const uint64_t* __restrict__ mask, const int64_t* __restrict__ order, int64_t n,
                                  int64_t words) {
    extern __shared__ uint64_t removed[];
    __shared__ int kept_rows[kBoxesPerWord];  // the current block's kept boxes (0..63), in order
    __shared__ int n_kept_rows;
    const int tid = threadIdx.x, lane = tid % 32;
    for (int64_t w = tid; w < words; w += blockDim.x) removed[w] = 0;
    int64_t kept = 0;  // used by warp 0 only: boxes kept so far
    __syncthreads();
    for (int64_t b = 0; b < words; b++) {
        const int64_t first = b * kBoxesPerWord;
        if (tid < 32) {
            // each lane holds the diagonal words of two of the block's boxes: lane and lane + 32
            const int64_t i0 = first + lane, i1 = first + lane + 32;
            const uint64_t d0 = i0 < n ? mask[i0 * words + b] : 0;
            const uint64_t d1 = i1 < n ? mask[i1 * words + b] : 0;
            const int64_t here = min(int64_t(kBoxesPerWord), n - first);
            uint64_t gone = removed[b];
            if (here < kBoxesPerWord) gone |= ~uint64_t(0) << here;  // past the last box: never kept
            for (int j = 0; j < kBoxesPerWord; j++) {  // the same on every lane: j is uniform
                const uint64_t dj = __shfl_sync(kFullWarp, j < 32 ? d0 : d1, j % 32);
                if (!((gone >> j) & 1)) gone |= dj;  // box j kept: it removes the later boxes it overlaps
            }
            // A box's own bit is set only by an earlier box (a diagonal word has bits above its box only), so the
            // kept boxes are exactly the clear bits.
            const uint64_t kept_bits = ~gone;
            for (int j = lane; j < kBoxesPerWord; j += 32) {
                if ((kept_bits >> j) & 1) {
                    const int rank = __popcll(kept_bits & ((uint64_t(1) << j) - 1));  // kept boxes before j
                    keep[kept + rank] = order[first + j];
                    kept_rows[rank] = j;
                }
            }
            kept += __popcll(kept_bits);
            if (lane == 0) n_kept_rows = __popcll(kept_bits);
        }
        __syncthreads();  // kept_rows ready
        // Each thread owns words w = b + 1 + tid, b + 1 + tid + 256, ...: ORs the kept rows' words into it. The
        // loads of one row are consecutive words across the threads (coalesced); rows are independent loads.
        const int rows = n_kept_rows;
        for (int64_t w = b + 1 + tid; w < words; w += blockDim.x) {
            uint64_t acc = removed[w];
#pragma unroll 4
            for (int k = 0; k < rows; k++) acc |= mask[(first + kept_rows[k]) * words + w];
            removed[w] = acc;
        }
        __syncthreads();  // removed ready for the next block, kept_rows free to be overwritten
    }
    if (tid == 0) *count = kept;
}

// ----------------------------------------------------------------------------------------------
// Launchers

int64_t nms_mask_words(int64_t n) { return cdiv(n, kBoxesPerWord); }

// The walk keeps one bit per box in shared memory: up to the device's opt-in limit (227 KB on an H100/H200: 1.8 M
// boxes, whose mask would take 430 GB anyway). The mask kernel's grid.y (65535 row blocks) allows 4.2 M.
int64_t nms_max_boxes_cuda(int device) {
    const int bytes = per_device(
        device, [&] { return device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device, 48 * 1024); });
    const int64_t by_smem = int64_t(bytes - 1024) / 8 * kBoxesPerWord;  // 1 KB for the static shared memory
    const int64_t by_grid = int64_t(65535) * kBoxesPerWord;
    return by_smem < by_grid ? by_smem : by_grid;
}

cudaError_t nms_cuda(DType dtype, int64_t* keep, int64_t* count, uint64_t* mask, const void* boxes,
                     const int64_t* order, int64_t n, double iou_threshold, int device, cudaStream_t stream) {
    const int64_t words = nms_mask_words(n);
    const dim3 grid(static_cast<unsigned>(words), static_cast<unsigned>(words));
    const cudaError_t err = dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        nms_mask_kernel<T><<<grid, kBoxesPerWord, 0, stream>>>(mask, static_cast<const T*>(boxes), order, n, words,
                                                               float(iou_threshold));
        return cudaGetLastError();
    });
    if (err != cudaSuccess) return err;
    const size_t smem = size_t(words) * sizeof(uint64_t);
    if (smem > 48 * 1024) {  // past 48 KB a kernel must ask for it (393,216 boxes and more)
        const cudaError_t e =
            cudaFuncSetAttribute(nms_reduce_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
        if (e != cudaSuccess) return e;
    }
    nms_reduce_kernel<<<1, kReduceThreads, smem, stream>>>(keep, count, mask, order, n, words);
    return cudaGetLastError();
}
