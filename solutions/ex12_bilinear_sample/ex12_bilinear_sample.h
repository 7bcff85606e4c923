// Exercise 12, answered: torchvision's bilinear_interpolate. Off the map by more than a pixel: 0; within a pixel
// of an edge: clamped onto it; the last row and column have no neighbour after them.
#pragma once
#include "ex12_bilinear_sample_given.h"

template <typename T>
KIT_HD inline T bilinear(const T* plane, int64_t H, int64_t W, T y, T x) {
    if (y < T(-1) || y > T(H) || x < T(-1) || x > T(W)) return T(0);  // more than a pixel off the map
    if (y <= T(0)) y = T(0);
    if (x <= T(0)) x = T(0);
    int64_t y_low = int64_t(y), x_low = int64_t(x), y_high, x_high;
    if (y_low >= H - 1) {  // the last row (or past it, up to H): both neighbours are row H - 1
        y_high = y_low = H - 1;
        y = T(y_low);
    } else {
        y_high = y_low + 1;
    }
    if (x_low >= W - 1) {
        x_high = x_low = W - 1;
        x = T(x_low);
    } else {
        x_high = x_low + 1;
    }
    const T ly = y - T(y_low), lx = x - T(x_low), hy = T(1) - ly, hx = T(1) - lx;
    return hy * hx * plane[y_low * W + x_low] + hy * lx * plane[y_low * W + x_high] +
           ly * hx * plane[y_high * W + x_low] + ly * lx * plane[y_high * W + x_high];
}
