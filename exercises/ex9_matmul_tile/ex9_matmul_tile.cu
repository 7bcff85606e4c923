// The GPU grid for exercise 9: blocks of 32 x 32 threads, blockIdx.x over column tiles of C, blockIdx.y over row
// tiles; each thread's work in ex9_matmul_tile.h. Nothing to edit here.
#include "ex9_matmul_tile.h"

__shared__ bool ex9_stagger;  // the block's stagger flag (namespace-scope shared memory: one per block)

// Hold warps 1-31 back ~50 us, so that warp 0 runs ahead (as thread 0 does on the CPU) and a missing barrier
// shows every time. Warp w is the threads with threadIdx.y == w (blockDim.x == 32).
__device__ void ex9_hold_back() {
    if (ex9_stagger && threadIdx.y != 0) {
        const long long start = clock64();
        while (clock64() - start < 100000) {
        }
    }
}

__global__ void ex9_matmul_tile_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                       bool stagger) {
    __shared__ float As[kEx9Tile][kEx9Tile], Bs[kEx9Tile][kEx9Tile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    if (stagger) {  // NaN: an element of a tile read before its thread wrote it
        As[ty][tx] = __int_as_float(0x7fc00000);
        Bs[ty][tx] = __int_as_float(0x7fc00000);
    }
    if (tx == 0 && ty == 0) ex9_stagger = stagger;
    __syncthreads();
    ex9_hold_back();
    matmul_tile_thread(tx, ty, blockIdx.x, blockIdx.y, As, Bs, c, a, b, M, N, K);
}

cudaError_t ex9_matmul_tile_cuda(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                                 bool stagger, cudaStream_t stream) {
    const dim3 block(kEx9Tile, kEx9Tile), grid(unsigned(cdiv(N, kEx9Tile)), unsigned(cdiv(M, kEx9Tile)));
    ex9_matmul_tile_kernel<<<grid, block, 0, stream>>>(c, a, b, M, N, K, stagger);
    return cudaGetLastError();
}
