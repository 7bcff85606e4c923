// An experiment, run by hand on a Hopper GPU, behind a sentence of kernels/matmul/matmul_hopper.cu: must a TMA box
// start on a 16-byte boundary? A tensor map's start and row strides must be multiples of 16 bytes (cuTensorMapEncode
// refuses others); the box's coordinates are given per copy, so it is only a run that tells. This loads a 16 x 64
// bfloat16 box (128-byte swizzle, as the matmul's A tiles) from a 16 x 256 matrix at columns 0, 8, 1 and 3 and
// checks every element. On an H200 (2026-12-03) columns 0 and 8 load right, and column 1 stops the kernel with
// "an illegal instruction was encountered" (the context is lost, so column 3 is not reached).
//
//   nvcc -std=c++17 -arch=sm_90a -DLABKIT_WITH_CUDA -Ikernels/common -Ikernels/matmul \
//        scripts/experiment_tma_box_start.cu -o /tmp/tma_box_start && /tmp/tma_box_start
#include <cstdio>

#include "matmul_hopper.cuh"

using T = __nv_bfloat16;

// One thread: the box at column x into shared memory, then out to global memory with the swizzle undone (row r's
// 16-byte piece p was stored at piece p ^ (r % 8)).
__global__ void load_box(const __grid_constant__ CUtensorMap map, int x, T* out) {
    extern __shared__ uint8_t raw[];
    const T* box = reinterpret_cast<const T*>(aligned_smem(raw));
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x != 0) return;
    bar_init(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    bar_expect_bytes(&bar, 16 * 128);
    tma_load(const_cast<T*>(box), &map, x, 0, &bar);
    bar_wait(&bar, 0);
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 64; c++) out[r * 64 + c] = box[r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8];
}

int main() {
    constexpr int kRows = 16, kCols = 256;
    static T host[kRows * kCols], got[kRows * 64];
    for (int i = 0; i < kRows * kCols; i++) host[i] = __float2bfloat16(float(i % 251));
    T *matrix = nullptr, *out = nullptr;
    cudaMalloc(&matrix, sizeof host);
    cudaMalloc(&out, sizeof got);
    cudaMemcpy(matrix, host, sizeof host, cudaMemcpyHostToDevice);
    CUtensorMap map;
    if (!make_map(&map, matrix, kRows, kCols, kCols, kRows)) {
        printf("cuTensorMapEncodeTiled refused the map\n");
        return 1;
    }
    cudaFuncSetAttribute(load_box, cudaFuncAttributeMaxDynamicSharedMemorySize, 4096);
    for (int x : {0, 8, 1, 3}) {
        load_box<<<1, 32, 4096>>>(map, x, out);
        const cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            printf("box at column %d: %s\n", x, cudaGetErrorString(e));
            return 1;
        }
        cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost);
        bool right = true;
        for (int r = 0; r < kRows; r++)
            for (int c = 0; c < 64; c++) {
                const float want = x + c < kCols ? __bfloat162float(host[r * kCols + x + c]) : 0.0f;
                right = right && __bfloat162float(got[r * 64 + c]) == want;
            }
        printf("box at column %d: loaded, %s\n", x, right ? "every element right" : "WRONG elements");
    }
    return 0;
}
