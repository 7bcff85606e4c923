// Exercise 14, answered: torchvision's deformable sample. The grid point moved by the offset, read by bilinear
// interpolation with zero padding (a pixel off the map reads 0), times the mask.
#pragma once
#include "ex14_deform_sample_given.h"

template <typename T>
KIT_HD inline T deform_tap(const T* plane, const Ex14Shape& s, int64_t oy, int64_t ox, int64_t i, int64_t j, T dy, T dx,
                           T m) {
    const int64_t H = s.height, W = s.width;
    const T y = T(oy * s.stride_h - s.pad_h + i * s.dilation_h) + dy;  // the grid point, a whole pixel, moved
    const T x = T(ox * s.stride_w - s.pad_w + j * s.dilation_w) + dx;
    if (y <= T(-1) || y >= T(H) || x <= T(-1) || x >= T(W)) return T(0);  // no pixel of the map in reach
    const T fy = floor(y), fx = floor(x);  // floor, not int64_t(y): -0.5 lies between rows -1 and 0
    const int64_t y0 = int64_t(fy), x0 = int64_t(fx), y1 = y0 + 1, x1 = x0 + 1;
    const T ly = y - fy, lx = x - fx, hy = T(1) - ly, hx = T(1) - lx;
    const T v00 = y0 >= 0 && x0 >= 0 ? plane[y0 * W + x0] : T(0);  // a pixel off the map reads 0
    const T v01 = y0 >= 0 && x1 < W ? plane[y0 * W + x1] : T(0);
    const T v10 = y1 < H && x0 >= 0 ? plane[y1 * W + x0] : T(0);
    const T v11 = y1 < H && x1 < W ? plane[y1 * W + x1] : T(0);
    return m * (hy * hx * v00 + hy * lx * v01 + ly * hx * v10 + ly * lx * v11);
}
