// roi_align.h: the torch-free entry points of roi_align, shared by the kernels and the binding (roi_align.cpp),
// and the one piece of arithmetic the CPU and GPU kernels share: where a box's samples fall, and with what
// weights. Written once (KIT_HD), so the two devices compute the same numbers, in torchvision's order.
//
// RoIAlign (Mask R-CNN): box k (image b, corners x1 y1 x2 y2, in image coordinates) is cut into PH x PW bins;
// each bin's value, per channel, is the average of grid_h x grid_w bilinear samples of the feature map at
// evenly spaced points inside the bin. No rounding of the box to whole pixels (RoIPool's flaw): that is
// the "align".
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

// What one call works on: K boxes over an input of N images x C channels x H x W, pooled to PH x PW bins.
struct RoiAlignShape {
    int64_t boxes, batch, channels, height, width, pooled_height, pooled_width;
    double spatial_scale;    // image coordinates -> feature-map pixels (1/16 for a stride-16 feature map)
    int64_t sampling_ratio;  // samples per bin along each axis; <= 0: ceil(box size / bins), per box
    bool aligned;            // shift by half a pixel so a box edge at pixel 0 samples pixel 0's centre
};

// The backward versions (roi_align.cu explains both). Which one ops.roi_align runs is decided in op.py (FAST).
enum RoiAlignBackward : int64_t { kRoiAlignBackwardAtomic = 1, kRoiAlignBackwardChannelsLast = 2 };

// out (K, C, PH, PW) from input (N, C, H, W) and boxes (K, 5), all contiguous and of the type `dtype` names, on
// the CPU. Returns -1, or the first box whose batch index is not in [0, N) (nothing is computed then).
int64_t roi_align_forward_cpu(DType dtype, void* out, const void* input, const void* boxes, const RoiAlignShape& s);
// grad_input (N, C, H, W), zeroed by the caller, += the gradient of grad_out (K, C, PH, PW). grad_input is float for
// the 16-bit dtypes (the sums are kept in float; the caller rounds once), else of `dtype`. Returns as above.
int64_t roi_align_backward_cpu(DType dtype, void* grad_input, const void* grad_out, const void* boxes,
                               const RoiAlignShape& s);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same on the GPU (roi_align.cu), launched on `stream`, returning the launch's error (cudaSuccess if none).
// There the batch index is not checked against N on the host (that would cost a copy and a wait every call): a box
// whose index is out of range gives zeros and passes no gradient. The forward reads input as (N, C, H, W), or with
// `channels_last` as (N, H, W, C); out is (K, C, PH, PW) either way. The backward's `version`: 1 (atomic) writes
// grad_input as (N, C, H, W); 2 (channels-last) as (N, H, W, C).
cudaError_t roi_align_forward_cuda(DType dtype, bool channels_last, void* out, const void* input, const void* boxes,
                                   const RoiAlignShape& s, cudaStream_t stream);
cudaError_t roi_align_backward_cuda(DType dtype, int64_t version, void* grad_input, const void* grad_out,
                                    const void* boxes, const RoiAlignShape& s, cudaStream_t stream);
#endif

// ----------------------------------------------------------------------------------------------
// The geometry, in A: float for float32 and the 16-bit types, double for float64. The expressions and their order
// are torchvision's (csrc/ops/cpu/roi_align_kernel.cpp): a float32 result then differs from it by rounding alone.

// One box, scaled to feature-map pixels.
template <typename A>
struct RoiBox {
    int64_t batch;           // its image; -1 when the index is out of range (or not a number)
    A start_h, start_w;      // top-left corner
    A bin_h, bin_w;          // one bin's size
    int64_t grid_h, grid_w;  // samples per bin along y and x (0 for an empty box)
    A count;                 // grid_h * grid_w, at least 1: the average's divisor
};

KIT_HD inline float ceil_of(float v) { return ceilf(v); }
KIT_HD inline double ceil_of(double v) { return ::ceil(v); }

template <typename A>
KIT_HD inline RoiBox<A> roi_box(A index, A x1, A y1, A x2, A y2, const RoiAlignShape& s) {
    RoiBox<A> r;
    // The index is truncated to an integer, as torchvision's (int) cast does; the test comes first because casting
    // a NaN or out-of-range float to an integer is undefined behaviour.
    r.batch = (index > A(-1) && index < A(s.batch)) ? int64_t(index) : -1;
    const A scale = A(s.spatial_scale);
    const A offset = s.aligned ? A(0.5) : A(0);
    r.start_w = x1 * scale - offset;
    r.start_h = y1 * scale - offset;
    A roi_w = (x2 * scale - offset) - r.start_w;
    A roi_h = (y2 * scale - offset) - r.start_h;
    if (!s.aligned) {  // the legacy version makes a malformed (inverted or tiny) box at least 1 x 1 pixel
        roi_w = roi_w < A(1) ? A(1) : roi_w;
        roi_h = roi_h < A(1) ? A(1) : roi_h;
    }
    r.bin_h = roi_h / A(s.pooled_height);
    r.bin_w = roi_w / A(s.pooled_width);
    // sampling_ratio <= 0: about one sample per pixel, ceil(box / bins). An inverted aligned box gives <= 0: no
    // samples, output 0 (torchvision's loops run zero times there too). Huge values are capped before the cast.
    const A gh = ceil_of(roi_h / A(s.pooled_height)), gw = ceil_of(roi_w / A(s.pooled_width));
    const A cap = A(1 << 30);
    r.grid_h = s.sampling_ratio > 0 ? s.sampling_ratio : (gh > A(0) ? int64_t(gh < cap ? gh : cap) : 0);
    r.grid_w = s.sampling_ratio > 0 ? s.sampling_ratio : (gw > A(0) ? int64_t(gw < cap ? gw : cap) : 0);
    const int64_t n = r.grid_h * r.grid_w;
    r.count = A(n > 1 ? n : 1);
    return r;
}

// Where the i-th sample of bin p falls along one axis (y: start_h, bin_h, grid_h, H; x: the same with w, W): the
// two pixel rows (or columns) around it, and their weights. Bilinear interpolation is separable, so a sample's four
// weights are products of its y and x weights, and a box needs PH * grid_h + PW * grid_w of these, not
// PH * PW * grid_h * grid_w: the kernels compute them once per box.
template <typename A>
struct AxisSample {
    int64_t lo, hi;  // the two pixels (equal at the last pixel)
    A l, h;          // their weights: h = 1 - l for lo, l for hi
    bool inside;     // false: the sample lies more than a pixel outside the map and contributes 0
};

template <typename A>
KIT_HD inline AxisSample<A> axis_sample(A start, A bin, int64_t grid, int64_t p, int64_t i, int64_t size) {
    A v = start + A(p) * bin + A(float(i) + 0.5f) * bin / A(grid);  // e.g. 0.5 and 1.5 bins / 2 in: bin centres
    AxisSample<A> a{0, 0, A(0), A(0), false};
    if (!(v >= A(-1) && v <= A(size))) return a;  // written so that a NaN coordinate lands here too
    a.inside = true;
    if (v <= A(0)) v = A(0);  // within a pixel of the edge: clamped onto it
    a.lo = int64_t(v);
    if (a.lo >= size - 1) {
        a.lo = a.hi = size - 1;
        v = A(a.lo);
    } else {
        a.hi = a.lo + 1;
    }
    a.l = v - A(a.lo);
    a.h = A(1) - a.l;
    return a;
}
