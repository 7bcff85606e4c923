// What exercise 11 gives: RingStep (the lesson's, matmul_ring.h), the CPU model of the ring and the GPU launcher
// (the binding includes this alone, so an edit of ex11_wgmma_ring.h recompiles the kernel files only). Nothing to
// edit here.
#pragma once
#include <cstdint>

#include "../../kernels/matmul/matmul_ring.h"  // RingStep, and the lesson's matmul_ring_step

// What the CPU model of the ring found (ex11_wgmma_ring_cpu.cpp).
enum Ex11Status : int64_t {
    kRingOk = 0,
    kRingDeadlock = 1,     // neither the producer nor the consumer could go on, with steps left
    kRingStale = 2,        // the consumer read a slot whose tiles were not its step's (not landed yet)
    kRingOverwritten = 3,  // the producer refilled a slot whose tiles the consumer had not read yet
    kRingBadSlot = 4,      // a slot outside 0 .. stages - 1
};

// C = A @ B (float32, row-major) through a CPU model of versions 9-12's ring of `stages` slots, with ring_step
// (ex11_wgmma_ring.h) deciding every slot and wait. order 0: the producer goes first and runs until it must wait;
// 1: the consumer goes first. Returns an Ex11Status; *step and *slot say where it went wrong (-1 if nowhere).
int64_t ex11_wgmma_ring_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int stages,
                            int order, int64_t* step, int64_t* slot);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// Whether `device` can run the GPU half (a Hopper GPU, and device code built for sm_90a).
bool ex11_wgmma_ring_available(int device);
// C = A @ B in bfloat16 by the lesson's version 9 (a producer and a consumer warpgroup over a ring of 5 slots) with
// ring_step deciding every slot and wait; K and N multiples of 8, a and b 16-byte aligned. A wait that never ends
// gives up after about a second and sets *stuck (device memory) to 1.
cudaError_t ex11_wgmma_ring_cuda(void* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K, int* stuck,
                                 int device, cudaStream_t stream);
#endif
