// deform_conv2d.h: the torch-free entry points of deform_conv2d, shared by the kernels and the binding
// (deform_conv2d.cpp), and the arithmetic every device's kernels share: where a tap samples the input, the bilinear
// value there, and its slope along y and x. Written once (KIT_HD), so the CPU kernels and the GPU kernels compute
// the same numbers, in torchvision's order.
//
// Deformable convolution (DCNv1, Dai et al. 2017; DCNv2 adds the mask, Zhu et al. 2018): a convolution whose every
// tap (i, j) at every output pixel (oy, ox) reads the input not at the grid point
//     (oy * stride_h - pad_h + i * dilation_h,  ox * stride_w - pad_w + j * dilation_w)
// but at that point plus a learnt, fractional offset (dy, dx), read by bilinear interpolation, and (v2) scaled by a
// learnt mask m in the tap's place. The offsets and masks are per image, output pixel and tap, shared by the input
// channels of one offset group. Everything else is an ordinary convolution: out = weight @ columns (+ bias), where
// columns holds the sampled (and masked) values, one row per (input channel, tap), one column per output pixel.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

// What one call works on. The binding cuts a batch into chunks and calls the kernels once per chunk: `batch` is the
// images of that call, and the pointers handed over point at its first image.
struct DeformConv2dShape {
    int64_t batch, in_channels, height, width;  // input (batch, C_in, H, W)
    int64_t out_channels;                       // weight (C_out, C_in / weight_groups, kernel_h, kernel_w)
    int64_t kernel_h, kernel_w;
    int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int64_t out_height, out_width;  // (H + 2 pad - dilation (k - 1) - 1) / stride + 1, along each axis
    int64_t weight_groups;          // input channels in C_in / weight_groups groups, each with its own filters
    int64_t offset_groups;          // input channels in C_in / offset_groups groups, each with its own offsets
    bool has_mask;                  // DCNv2: a mask scales each sample; without one (DCNv1) every sample counts once
};

// The layouts, all contiguous (L = out_height * out_width, kk = kernel_h * kernel_w):
//   input   (batch, C_in, H, W)
//   offset  (batch, offset_groups * kk * 2, OH, OW): channel (g * kk + k) * 2 is tap k's dy, + 1 its dx
//   mask    (batch, offset_groups * kk, OH, OW):     channel g * kk + k is tap k's mask
//   columns (C_in * kk, batch * L): row c * kk + k, column b * L + oy * OW + ox
// grad_input (the backward's sum) is float for the 16-bit dtypes: col2im sums many terms into each pixel; else of
// `dtype`. columns (and grad_columns) on the CPU: float for the 16-bit dtypes (a 16-bit column would round every
// sample before the matmul), else of `dtype`; on the GPU: of `dtype`, always (the tensor cores' input).

// columns, overwritten, from input, offset and mask (nullptr when !s.has_mask).
void deform_conv2d_im2col_cpu(DType dtype, void* columns, const void* input, const void* offset, const void* mask,
                              const DeformConv2dShape& s);
// grad_input += im2col's transpose applied to grad_columns (the gradient of columns): each sample hands its
// gradient back to the four pixels it read, with the same weights. grad_input is zeroed by the caller.
void deform_conv2d_col2im_cpu(DType dtype, void* grad_input, const void* grad_columns, const void* offset,
                              const void* mask, const DeformConv2dShape& s);
// grad_offset (offset's shape) and grad_mask (mask's shape; untouched, and may be nullptr, when !s.has_mask),
// overwritten: for each sample, how its value moves with its position and its mask, summed over the channels of its
// offset group, times the gradient of its column.
void deform_conv2d_coord_grad_cpu(DType dtype, void* grad_offset, void* grad_mask, const void* grad_columns,
                                  const void* input, const void* offset, const void* mask, const DeformConv2dShape& s);

#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
// The same three on the GPU (deform_conv2d.cu), columns and grad_columns of `dtype`. Launched on `stream`,
// returning the launch's error (cudaSuccess if none). col2im's adds go to pixels that other samples share: atomics.
cudaError_t deform_conv2d_im2col_cuda(DType dtype, void* columns, const void* input, const void* offset,
                                      const void* mask, const DeformConv2dShape& s, cudaStream_t stream);
cudaError_t deform_conv2d_col2im_cuda(DType dtype, void* grad_input, const void* grad_columns, const void* offset,
                                      const void* mask, const DeformConv2dShape& s, cudaStream_t stream);
cudaError_t deform_conv2d_coord_grad_cuda(DType dtype, void* grad_offset, void* grad_mask, const void* grad_columns,
                                          const void* input, const void* offset, const void* mask,
                                          const DeformConv2dShape& s, cudaStream_t stream);
#endif

// ----------------------------------------------------------------------------------------------
// One sample, in A: float for float32 and the 16-bit types, double for float64. The rules and the expressions are
// torchvision's (csrc/ops/cpu/deform_conv2d_kernel.cpp), so a float32 result differs from it by rounding alone.

KIT_HD inline float floor_of(float v) { return floorf(v); }
KIT_HD inline double floor_of(double v) { return ::floor(v); }

// Where tap i of output row oy samples along y (x: ox, j, stride_w, pad_w, dilation_w): the grid point, an exact
// integer, plus the offset.
template <typename A>
KIT_HD inline A sample_position(int64_t out_index, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                                A offset) {
    return A(out_index * stride - pad + tap * dilation) + offset;
}

// A sample at (y, x) and the four pixels around it: rows y0, y0 + 1 and columns x0, x0 + 1, y0 = floor(y),
// x0 = floor(x). Pixels off the map read as 0 (zero padding), and so does the whole sample when it lies a pixel or
// more outside: y <= -1, y >= H, x <= -1 or x >= W (its nearest pixel would get weight 0 anyway; the test keeps
// torchvision's exact zeros).
template <typename A>
struct DeformSample {
    int64_t y0, x0;          // the top-left pixel (set only where `reaches`)
    A ly, lx;                // y - y0, x - x0: the weights of the bottom row and the right column
    bool inside;             // y in (-1, H) and x in (-1, W): the value can be non-zero
    bool reaches;            // y in [-1, H) and x in [-1, W): the slopes can be non-zero (see sample_slope_y)
    bool top, bottom;        // rows y0 and y0 + 1 lie on the map
    bool left, right;        // columns x0 and x0 + 1 lie on the map
    bool nan;                // y or x is NaN: the value and the slopes are NaN, and no pixel is read or written
};

template <typename A>
KIT_HD inline DeformSample<A> deform_sample(A y, A x, int64_t height, int64_t width) {
    DeformSample<A> s{0, 0, A(0), A(0), false, false, false, false, false, false, false};
    // A NaN position fails both tests below, and an infinite one lies outside: then nothing is read, and no NaN or
    // out-of-range float is cast to an integer (undefined behaviour). NaN goes on to the results: a NaN offset must
    // not read as a plain 0
    s.nan = y != y || x != x;
    s.reaches = y >= A(-1) && y < A(height) && x >= A(-1) && x < A(width);
    if (!s.reaches) return s;
    s.inside = y > A(-1) && x > A(-1);
    const A fy = floor_of(y), fx = floor_of(x);
    s.y0 = int64_t(fy);
    s.x0 = int64_t(fx);
    s.ly = y - fy;
    s.lx = x - fx;
    s.top = s.y0 >= 0;
    s.bottom = s.y0 + 1 <= height - 1;
    s.left = s.x0 >= 0;
    s.right = s.x0 + 1 <= width - 1;
    return s;
}

// The four pixels' values (0 for a pixel off the map).
template <typename A>
struct Corners {
    A top_left, top_right, bottom_left, bottom_right;
};

// The four pixels of a sample in one channel plane (H x W, row-major), 0 where off the map. `load` widens an element
// to A: each device's own (cpu_half.h's load on the CPU, cuda_types.cuh's ld on the GPU).
template <typename A, typename T, typename Load>
KIT_HD inline Corners<A> sample_corners(const T* plane, const DeformSample<A>& s, int64_t width, Load load) {
    Corners<A> v{A(0), A(0), A(0), A(0)};
    if (!s.reaches) return v;
    const T* row0 = plane + s.y0 * width;
    const T* row1 = row0 + width;
    if (s.top && s.left) v.top_left = A(load(row0[s.x0]));
    if (s.top && s.right) v.top_right = A(load(row0[s.x0 + 1]));
    if (s.bottom && s.left) v.bottom_left = A(load(row1[s.x0]));
    if (s.bottom && s.right) v.bottom_right = A(load(row1[s.x0 + 1]));
    return v;
}

// The bilinear value: each pixel weighted by how near the sample is to it along both axes. 0 unless `inside`.
template <typename A>
KIT_HD inline A sample_value(const DeformSample<A>& s, const Corners<A>& v) {
    if (s.nan) return A(NAN);
    if (!s.inside) return A(0);
    const A hy = A(1) - s.ly, hx = A(1) - s.lx;
    const A w1 = hy * hx, w2 = hy * s.lx, w3 = s.ly * hx, w4 = s.ly * s.lx;
    return w1 * v.top_left + w2 * v.top_right + w3 * v.bottom_left + w4 * v.bottom_right;
}

// d value / dy: along y the value is a straight line between the two rows, so its slope is the difference of the
// rows, each read at x. At a whole-pixel y (where the slope jumps) this is the slope on the side of larger y, and
// at y = -1 it is the slope just inside the map (torchvision's rule: the pixels of floor(y), with no test of the
// value's own range): hence `reaches`, one half-open interval, not `inside`.
template <typename A>
KIT_HD inline A sample_slope_y(const DeformSample<A>& s, const Corners<A>& v) {
    if (s.nan) return A(NAN);
    if (!s.reaches) return A(0);
    return s.lx * (v.bottom_right - v.top_right) + (A(1) - s.lx) * (v.bottom_left - v.top_left);
}

// d value / dx, the same along x.
template <typename A>
KIT_HD inline A sample_slope_x(const DeformSample<A>& s, const Corners<A>& v) {
    if (s.nan) return A(NAN);
    if (!s.reaches) return A(0);
    return s.ly * (v.bottom_right - v.bottom_left) + (A(1) - s.ly) * (v.top_right - v.top_left);
}
