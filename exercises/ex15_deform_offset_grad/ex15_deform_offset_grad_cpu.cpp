// The CPU runs every thread of the same grid, one after another. Nothing to edit here.
#include "ex15_deform_offset_grad.h"

template <typename T>
static void run(T* grad_offset, const T* grad_columns, const T* input, const T* offset, const T* mask,
                const Ex15Shape& s) {
    const int64_t n = s.batch * s.offset_groups * s.kernel_h * s.kernel_w * 2 * s.out_height * s.out_width;
    for (int64_t e = 0; e < n; e++) ex15_offset_grad_thread(e, grad_offset, grad_columns, input, offset, mask, s);
}

void ex15_deform_offset_grad_cpu(bool f64, void* grad_offset, const void* grad_columns, const void* input,
                                 const void* offset, const void* mask, const Ex15Shape& s) {
    if (f64)
        run((double*)grad_offset, (const double*)grad_columns, (const double*)input, (const double*)offset,
            (const double*)mask, s);
    else
        run((float*)grad_offset, (const float*)grad_columns, (const float*)input, (const float*)offset,
            (const float*)mask, s);
}
