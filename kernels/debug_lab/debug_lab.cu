// debug_lab.cu: kernels for the debugging lesson (05_debugging.ipynb). Two are wrong ON PURPOSE; never copy them.
//
// Each is a bug students meet in their first weeks, small enough to see whole:
//   1. printf_kernel        not a bug: printf from the GPU, to see what each thread holds
//   2. oob_write_kernel     writes `count` floats into a buffer of n: past its end when count > n
//   3. smem_race_kernel     reverses a block through shared memory with no __syncthreads(): a race
//   4. smem_reverse_kernel  the same with the barrier: right
// op.py builds this file with -lineinfo: the machine code keeps a map back to these lines, so
// compute-sanitizer can say "debug_lab.cu:NN" for a bad access instead of an offset into the kernel.
// (-lineinfo costs nothing at run time; -G, full device debugging, turns optimisation off.)
#include <cstdio>

#include "debug_lab.h"

// ----------------------------------------------------------------------------------------------
// GPU kernels

// 1. printf on the GPU: each thread formats into a buffer in GPU memory (1 MB by default: what does not
// fit is lost), which the host prints to the process's stdout at the next synchronising call.
__global__ void printf_kernel(const float* x, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) printf("block %d thread %d: x[%lld] = %g\n", blockIdx.x, threadIdx.x, (long long)i, x[i]);
}

// 2. THE BUG: the bound is `count`, which the caller got wrong, not the buffer's size n. A few floats past
// the end land in the allocator's rounding slack, or in the next tensor: nothing fails, and only a memory
// checker notices. Far past the end the writes leave the memory the process owns, and the GPU stops the
// kernel: "an illegal memory access was encountered", reported at a later call.
__global__ void oob_write_kernel(float* y, int64_t count) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) y[i] = float(i);  // out of bounds for every i >= n
}

// 3. THE BUG: no barrier between the writes to `tile` and the reads. Thread t reads the element thread
// kTile-1-t wrote, which belongs to another warp, and nothing makes that warp write first. Often the
// result is right anyway (that warp happened to be ahead), sometimes not: the worst kind of bug.
// racecheck reports the write and the read below whatever the timing.
__global__ void smem_race_kernel(float* y, const float* x) {
    __shared__ float tile[kTile];
    const int64_t base = int64_t(blockIdx.x) * kTile;
    tile[threadIdx.x] = x[base + threadIdx.x];              // the write
    y[base + threadIdx.x] = tile[kTile - 1 - threadIdx.x];  // the read: races with another warp's write
}

// 4. The fix: __syncthreads() waits until every thread of the block has reached it, so every write to
// `tile` is done (and visible) before any read.
__global__ void smem_reverse_kernel(float* y, const float* x) {
    __shared__ float tile[kTile];
    const int64_t base = int64_t(blockIdx.x) * kTile;
    tile[threadIdx.x] = x[base + threadIdx.x];
    __syncthreads();
    y[base + threadIdx.x] = tile[kTile - 1 - threadIdx.x];
}

// ----------------------------------------------------------------------------------------------
// Launchers: every launch is checked (a bad grid fails here, at the launch; a bad access only later).

cudaError_t printf_cuda(const float* x, int64_t n, cudaStream_t stream) {
    constexpr int threads = 32;  // small blocks, so a few elements already show several blocks
    printf_kernel<<<cdiv(n, threads), threads, 0, stream>>>(x, n);
    return cudaGetLastError();
}

cudaError_t oob_write_cuda(float* y, int64_t count, cudaStream_t stream) {
    constexpr int threads = 256;
    oob_write_kernel<<<cdiv(count, threads), threads, 0, stream>>>(y, count);
    return cudaGetLastError();
}

cudaError_t block_reverse_cuda(float* y, const float* x, int64_t n, bool race, cudaStream_t stream) {
    const int64_t blocks = n / kTile;  // the binding checks that n is a multiple of kTile
    if (race) {
        smem_race_kernel<<<blocks, kTile, 0, stream>>>(y, x);
    } else {
        smem_reverse_kernel<<<blocks, kTile, 0, stream>>>(y, x);
    }
    return cudaGetLastError();
}
