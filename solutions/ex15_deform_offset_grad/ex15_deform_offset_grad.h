// Exercise 15, answered: torchvision's coordinate weight. Along y the bilinear value is a straight line between two
// rows, so its slope is their difference, read at x; at a whole pixel floor(y) is y itself, which takes the slope on
// the side of larger y; y = -1 still reaches row 0.
#pragma once
#include "ex15_deform_offset_grad_given.h"

template <typename T>
KIT_HD inline Slopes<T> sample_slopes(const T* plane, int64_t H, int64_t W, T y, T x) {
    if (y < T(-1) || y >= T(H) || x < T(-1) || x >= T(W)) return {T(0), T(0)};  // no pixel within reach
    const T fy = floor(y), fx = floor(x);
    const int64_t y0 = int64_t(fy), x0 = int64_t(fx);
    const T ly = y - fy, lx = x - fx;
    const T v00 = pixel(plane, H, W, y0, x0), v01 = pixel(plane, H, W, y0, x0 + 1);
    const T v10 = pixel(plane, H, W, y0 + 1, x0), v11 = pixel(plane, H, W, y0 + 1, x0 + 1);
    const T dy = lx * (v11 - v01) + (T(1) - lx) * (v10 - v00);  // the rows' difference, read at x
    const T dx = ly * (v11 - v10) + (T(1) - ly) * (v01 - v00);  // the columns' difference, read at y
    return {dy, dx};
}
