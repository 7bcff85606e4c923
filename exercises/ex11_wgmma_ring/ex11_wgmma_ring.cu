// Exercise 11 on the GPU: the lesson's version 9 (kernels/matmul/matmul_hopper.cuh: a producer and a consumer
// warpgroup over a ring of 5 slots, TMA and wgmma) with ring_step (ex11_wgmma_ring.h) deciding every slot and wait.
// A wait that never ends gives up after kPolls polls (about a second) and says so, so a wrong parity ends the kernel
// instead of hanging the GPU. Nothing to edit here.
#include "../../kernels/matmul/matmul_hopper.cuh"
#include "ex11_wgmma_ring.h"

__device__ int ex11_built =  // whether this device code has wgmma (sm_90a)
#ifdef LABKIT_SM90A
    1;
#else
    0;
#endif

namespace {
struct StudentRing {
    static constexpr int64_t kPolls = int64_t(1) << 20;
    __device__ static RingStep step(int64_t i, int stages) { return ring_step(i, stages); }
};
}  // namespace

bool ex11_wgmma_ring_available(int device) { return hopper_ready(device, &ex11_built); }

cudaError_t ex11_wgmma_ring_cuda(void* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K, int* stuck,
                                 int device, cudaStream_t stream) {
    using T = __nv_bfloat16;
    CUtensorMap map_a, map_b;
    if (!make_map(&map_a, (const T*)a, M, K, K, 128) || !make_map(&map_b, (const T*)b, K, N, N, kBK))
        return cudaErrorInvalidValue;
    return launch_ws<T, 128, 128, 1, false, StudentRing>(map_a, map_b, (T*)c, M, N, K, device, stream, stuck);
}
