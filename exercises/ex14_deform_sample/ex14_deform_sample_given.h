// What exercise 14 gives: deformable convolution's im2col around your tap (which image, channel, tap and output pixel
// each entry of the columns is, and the offset and mask it takes), and the launchers (the binding includes this
// alone, so an edit of ex14_deform_sample.h recompiles the kernel files, not the binding). Nothing to edit here.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

constexpr int kEx14Threads = 256;

// One call: an input of N images x C channels x H x W, read by a kernel_h x kernel_w kernel with its stride, padding
// and dilation along each axis, at out_height x out_width output pixels; the channels fall in offset_groups groups,
// each with offsets and masks of its own.
struct Ex14Shape {
    int64_t batch, channels, height, width;
    int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int64_t out_height, out_width, offset_groups;
};

// Yours (ex14_deform_sample.h): what tap (i, j) of output pixel (oy, ox) reads from plane (one channel, H x W),
// moved by the offset (dy, dx) and scaled by the mask m.
template <typename T>
KIT_HD inline T deform_tap(const T* plane, const Ex14Shape& s, int64_t oy, int64_t ox, int64_t i, int64_t j, T dy, T dx,
                           T m);

// The layouts, all contiguous (kk = kernel_h * kernel_w, L = out_height * out_width, G = offset_groups):
//   input   (N, C, H, W)
//   offset  (N, G * kk * 2, out_height, out_width): channel (g * kk + k) * 2 is tap k's dy, the next one its dx
//   mask    (N, G * kk, out_height, out_width):     channel g * kk + k is tap k's mask
//   columns (C * kk, N * L): row c * kk + k, column n * L + oy * out_width + ox; tap k is (i, j) = (k / kernel_w,
//           k % kernel_w). A convolution's output is then weight (C_out, C * kk) @ columns (+ bias), image by image.
// Entry e of the columns, one thread each (the GPU's grid, and the CPU's loop): channel c of image n read by tap k at
// output pixel (oy, ox), with the offset and the mask of c's group.
template <typename T>
KIT_HD inline void ex14_im2col_thread(int64_t e, T* columns, const T* input, const T* offset, const T* mask,
                                      const Ex14Shape& s) {
    const int64_t kk = s.kernel_h * s.kernel_w, L = s.out_height * s.out_width, G = s.offset_groups;
    if (e >= s.channels * kk * s.batch * L) return;
    const int64_t column = e % (s.batch * L), row = e / (s.batch * L);
    const int64_t n = column / L, p = column % L, c = row / kk, k = row % kk;
    const int64_t g = c / (s.channels / G);
    const T* off = offset + ((n * G + g) * kk + k) * 2 * L + p;  // dy at off[0], dx at off[L]
    const T m = mask[((n * G + g) * kk + k) * L + p];
    const T* plane = input + (n * s.channels + c) * s.height * s.width;
    columns[e] =
        deform_tap(plane, s, p / s.out_width, p % s.out_width, k / s.kernel_w, k % s.kernel_w, off[0], off[L], m);
}

void ex14_deform_sample_cpu(bool f64, void* columns, const void* input, const void* offset, const void* mask,
                            const Ex14Shape& s);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex14_deform_sample_cuda(bool f64, void* columns, const void* input, const void* offset, const void* mask,
                                    const Ex14Shape& s, cudaStream_t stream);
#endif
