// What exercise 15 gives: the gradient of deformable convolution's offsets around your slopes (which offset each
// element of the gradient is, where its sample lies, and the sum over the channels of its offset group), a pixel read
// with zero padding, and the launchers (the binding includes this alone, so an edit of ex15_deform_offset_grad.h
// recompiles the kernel files, not the binding). Nothing to edit here.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

constexpr int kEx15Threads = 256;

// One call: an input of N images x C channels x H x W, read by a kernel_h x kernel_w kernel with its stride, padding
// and dilation along each axis, at out_height x out_width output pixels; the channels fall in offset_groups groups,
// each with offsets and masks of its own.
struct Ex15Shape {
    int64_t batch, channels, height, width;
    int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int64_t out_height, out_width, offset_groups;
};

// Pixel (row, col) of plane (H x W), or 0 for a pixel off the map (zero padding, exercise 14's rule).
template <typename T>
KIT_HD inline T pixel(const T* plane, int64_t H, int64_t W, int64_t row, int64_t col) {
    return row >= 0 && row < H && col >= 0 && col < W ? plane[row * W + col] : T(0);
}

// d value / dy and d value / dx of a bilinear sample.
template <typename T>
struct Slopes {
    T dy, dx;
};

// Yours (ex15_deform_offset_grad.h): the slopes of the bilinear value of plane (H x W) at (y, x).
template <typename T>
KIT_HD inline Slopes<T> sample_slopes(const T* plane, int64_t H, int64_t W, T y, T x);

// The layouts, all contiguous (kk = kernel_h * kernel_w, L = out_height * out_width, G = offset_groups):
//   input        (N, C, H, W)
//   offset       (N, G * kk * 2, out_height, out_width): channel (g * kk + k) * 2 is tap k's dy, the next one its dx
//   mask         (N, G * kk, out_height, out_width):     channel g * kk + k is tap k's mask
//   grad_columns (C * kk, N * L): the gradient of the columns (exercise 14's), row c * kk + k, column
//                n * L + oy * out_width + ox; tap k is (i, j) = (k / kernel_w, k % kernel_w)
//   grad_offset  offset's shape
// Element e of grad_offset, one thread each (the GPU's grid, and the CPU's loop): the offset dy (or dx) of tap k at
// output pixel (oy, ox) of image n moves the sample of every channel of its group; each column entry is mask * value,
// so its gradient is the sum of mask * slope * grad_columns over those channels, in torchvision's order.
template <typename T>
KIT_HD inline void ex15_offset_grad_thread(int64_t e, T* grad_offset, const T* grad_columns, const T* input,
                                           const T* offset, const T* mask, const Ex15Shape& s) {
    const int64_t kk = s.kernel_h * s.kernel_w, L = s.out_height * s.out_width, G = s.offset_groups;
    if (e >= s.batch * G * kk * 2 * L) return;
    const int64_t p = e % L, along_x = (e / L) % 2, k = (e / (2 * L)) % kk, g = (e / (2 * L * kk)) % G;
    const int64_t n = e / (2 * L * kk * G), oy = p / s.out_width, ox = p % s.out_width;
    const int64_t i = k / s.kernel_w, j = k % s.kernel_w;
    const T* off = offset + ((n * G + g) * kk + k) * 2 * L + p;  // dy at off[0], dx at off[L]
    const T m = mask[((n * G + g) * kk + k) * L + p];
    const T y = T(oy * s.stride_h - s.pad_h + i * s.dilation_h) + off[0];  // where the tap samples (exercise 14)
    const T x = T(ox * s.stride_w - s.pad_w + j * s.dilation_w) + off[L];
    const int64_t per_group = s.channels / G;
    T acc = T(0);
    for (int64_t c = g * per_group; c < (g + 1) * per_group; c++) {
        const Slopes<T> d = sample_slopes(input + (n * s.channels + c) * s.height * s.width, s.height, s.width, y, x);
        acc += m * (along_x ? d.dx : d.dy) * grad_columns[(c * kk + k) * s.batch * L + n * L + p];
    }
    grad_offset[e] = acc;
}

void ex15_deform_offset_grad_cpu(bool f64, void* grad_offset, const void* grad_columns, const void* input,
                                 const void* offset, const void* mask, const Ex15Shape& s);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex15_deform_offset_grad_cuda(bool f64, void* grad_offset, const void* grad_columns, const void* input,
                                         const void* offset, const void* mask, const Ex15Shape& s, cudaStream_t stream);
#endif
