// Exercise 13: RoIAlign's backward, the scatter. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex13_roi_scatter_given.h"  // neighbours(), atomic_add(), and the backward that calls scatter_sample

// One sample's share g of its bin's gradient, handed back to the pixels the forward read at the point (y, x):
// plane is grad_input's H x W plane of the sample's image and channel (pixel (row, col) at plane[row * W + col]).
// TODO (roughly 7 lines): the point's neighbours (neighbours(H, W, y, x)); nothing for a point off the map (its
// pixels are -1); else atomic_add g times each pixel's weight into that pixel, for the four pixels the forward read.
template <typename T>
KIT_HD inline void scatter_sample(T* plane, int64_t H, int64_t W, T y, T x, T g) {
}
