// Exercise 14: deformable convolution's offset sampling. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex14_deform_sample_given.h"  // the deformable im2col, which calls deform_tap for every entry of the columns

// What tap (i, j) of output pixel (oy, ox) reads from plane (one channel, s.height x s.width, row-major: pixel
// (row, col) is plane[row * W + col]), moved by the offset (dy, dx) and scaled by the mask m.
// TODO (roughly 12 lines): where the tap samples, y = oy * stride_h - pad_h + i * dilation_h + dy, and x likewise
// (ox, j, the _w sizes, dx); 0 for a sample with y <= -1, y >= H, x <= -1 or x >= W; else the rows floor(y) and
// floor(y) + 1, the columns floor(x) and floor(x) + 1, each pixel off the map reading 0, weighted (1 - ly)(1 - lx),
// (1 - ly) lx, ly (1 - lx), ly lx with ly = y - floor(y), lx = x - floor(x); all of it times m.
template <typename T>
KIT_HD inline T deform_tap(const T* plane, const Ex14Shape& s, int64_t oy, int64_t ox, int64_t i, int64_t j, T dy, T dx,
                           T m) {
    return T(0);
}
