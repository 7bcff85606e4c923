// The GPU grid for exercise 8: `blocks` blocks of 256 threads per row, the threads' work in ex8_block_sum.h.
// Nothing to edit here.
#include "ex8_block_sum.h"

__global__ void ex8_block_sum_kernel(float* out, const float* x, int64_t cols, int blocks, bool stagger) {
    __shared__ float warp_sums[kEx8Warps];
    const int t = threadIdx.x, warp = t / kWarpSize, block = blockIdx.x % blocks;
    const int64_t row = blockIdx.x / blocks;
    if (t < kEx8Warps) warp_sums[t] = __int_as_float(0x7fc00000);  // NaN: a slot read before its warp wrote it
    __syncthreads();
    if (stagger && warp != 0) {  // hold warps 1-7 back (~50 us), so that a missing barrier shows every time
        const long long start = clock64();
        while (clock64() - start < 100000) {
        }
    }
    block_finish(slice_sum_thread(t, block, blocks, x + row * cols, cols), warp, warp_sums, out, row);
}

cudaError_t ex8_block_sum_cuda(float* out, const float* x, int64_t rows, int64_t cols, bool stagger,
                               cudaStream_t stream) {
    const int blocks = ex8_blocks_per_row(cols);
    ex8_block_sum_kernel<<<rows * blocks, kEx8Threads, 0, stream>>>(out, x, cols, blocks, stagger);
    return cudaGetLastError();
}
