// nms.h: the torch-free entry points of nms, shared by the kernels and the binding (nms.cpp), and the one piece of
// arithmetic the CPU and GPU kernels share: the overlap (IoU) of two boxes, in torchvision's order of operations.
//
// Non-maximum suppression: visit the boxes from the highest score down; keep a box unless a box kept before it
// overlaps it by more than iou_threshold (intersection over union). The result is the kept boxes' indices, highest
// score first. The binding sorts the scores (PyTorch's stable descending sort, as torchvision does: equal scores
// keep their input order), and the kernels walk the boxes in that order: order[0] is the highest-scored box.
#pragma once
#include <cstdint>

#include "kit.h"

// keep[0 .. count) = the kept boxes' indices, in order; returns count. boxes (n, 4) rows x1 y1 x2 y2, contiguous,
// of the type `dtype` names; order (n) the boxes' indices by decreasing score. On the CPU.
int64_t nms_cpu(DType dtype, int64_t* keep, const void* boxes, const int64_t* order, int64_t n, double iou_threshold);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same on the GPU (nms.cu): mask is n * nms_mask_words(n) 64-bit words of scratch on the same GPU, keep n
// int64s, *count one int64 the kernel writes (the caller copies it back: the output's size depends on the data).
// n is at most nms_max_boxes_cuda(device). Launched on `stream`; returns the launches' error (cudaSuccess if none).
int64_t nms_mask_words(int64_t n);
int64_t nms_max_boxes_cuda(int device);
cudaError_t nms_cuda(DType dtype, int64_t* keep, int64_t* count, uint64_t* mask, const void* boxes,
                     const int64_t* order, int64_t n, double iou_threshold, int device, cudaStream_t stream);
#endif

// ----------------------------------------------------------------------------------------------
// The overlap test, in A: float for float32 and the 16-bit types, double for float64. `r` rounds an A to the box's
// dtype and back: the identity for float32 and float64; for the 16-bit types, where torchvision's CUDA kernel (its
// only 16-bit NMS, float16 alone) computes some differences in the 16-bit type, r rounds at the same places, so
// our 16-bit results are what that kernel gives.

// a * b rounded on its own: never fused with a following add into one FMA (which nvcc does by default, and which
// rounds once instead of twice). Then the GPU's IoU is the CPU's, bit for bit.
KIT_HD inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
KIT_HD inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

template <typename A>
struct Box4 {
    A x1, y1, x2, y2;
};

// A box's area: (x2 - x1) * (y2 - y1). (The y difference is the one torchvision's CUDA kernel rounds to 16 bits.)
template <typename A, typename Round>
KIT_HD inline A box_area(const Box4<A>& b, Round r) {
    return mul_rn(b.x2 - b.x1, r(b.y2 - b.y1));
}

// Whether box b overlaps the higher-scored box a by more than `threshold`: intersection / (area a + area b -
// intersection), with the areas precomputed. A box of zero area has IoU 0 with every other box (0 / 0 = NaN with
// another of zero area), and neither is above a threshold >= 0: it never suppresses and is never suppressed.
template <typename A, typename Round, typename Threshold>
KIT_HD inline bool overlaps(const Box4<A>& a, A area_a, const Box4<A>& b, A area_b, Threshold threshold, Round r) {
    const A left = a.x1 > b.x1 ? a.x1 : b.x1, right = a.x2 < b.x2 ? a.x2 : b.x2;
    const A top = a.y1 > b.y1 ? a.y1 : b.y1, bottom = a.y2 < b.y2 ? a.y2 : b.y2;
    const A w = r(right - left), h = r(bottom - top);
    const A inter = mul_rn(w > A(0) ? w : A(0), h > A(0) ? h : A(0));
    return inter / (area_a + area_b - inter) > threshold;
}
