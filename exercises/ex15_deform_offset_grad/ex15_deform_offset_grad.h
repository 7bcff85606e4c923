// Exercise 15: deformable convolution's offset gradient. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex15_deform_offset_grad_given.h"  // pixel(), Slopes, and the offsets' gradient, which calls sample_slopes

// How fast the bilinear value of plane (H x W) at (y, x) changes as the sample moves along y and along x: the value
// is exercise 14's (rows floor(y) and floor(y) + 1, columns floor(x) and floor(x) + 1, a pixel off the map reading 0:
// pixel(plane, H, W, row, col) reads with that rule).
// TODO (roughly 9 lines): 0 for both where the sample reaches no pixel (y < -1, y >= H, x < -1 or x >= W: note that
// y = -1 still reaches row 0); else with y0 = floor(y), x0 = floor(x), ly = y - y0, lx = x - x0 and the four pixels:
// dy is the difference of the rows y0 + 1 and y0, each read at x (weighted 1 - lx in column x0, lx in x0 + 1), and
// dx the difference of the columns x0 + 1 and x0, each read at y. At a whole pixel that is the slope on the side of
// the larger coordinate.
template <typename T>
KIT_HD inline Slopes<T> sample_slopes(const T* plane, int64_t H, int64_t W, T y, T x) {
    return {T(0), T(0)};
}
