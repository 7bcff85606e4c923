// The CPU runs every thread of the same grid, one after another. Nothing to edit here.
#include "ex13_roi_scatter.h"

template <typename T>
static void run(bool backward, T* out, const T* in, const T* boxes, const Ex13Shape& s) {
    const int64_t n = s.boxes * s.channels * s.pooled_height * s.pooled_width;
    for (int64_t i = 0; i < n; i++) {
        if (backward) ex13_backward_thread(i, out, in, boxes, s);
        else ex13_forward_thread(i, out, in, boxes, s);
    }
}

void ex13_roi_scatter_cpu(bool backward, bool f64, void* out, const void* in, const void* boxes, const Ex13Shape& s) {
    if (f64) run(backward, (double*)out, (const double*)in, (const double*)boxes, s);
    else run(backward, (float*)out, (const float*)in, (const float*)boxes, s);
}
