// Exercise 13, answered: the forward's gather read backwards. Each pixel the sample read gets g times the weight it
// was read with, by an atomic add (other samples, bins and boxes add into the same pixels at the same time).
#pragma once
#include "ex13_roi_scatter_given.h"

template <typename T>
KIT_HD inline void scatter_sample(T* plane, int64_t H, int64_t W, T y, T x, T g) {
    const Neighbours<T> n = neighbours(H, W, y, x);
    if (!n.inside) return;  // the forward read nothing there
    atomic_add(&plane[n.y_low * W + n.x_low], g * n.hy * n.hx);
    atomic_add(&plane[n.y_low * W + n.x_high], g * n.hy * n.lx);
    atomic_add(&plane[n.y_high * W + n.x_low], g * n.ly * n.hx);
    atomic_add(&plane[n.y_high * W + n.x_high], g * n.ly * n.lx);
}
