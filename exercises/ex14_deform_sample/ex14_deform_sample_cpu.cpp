// The CPU runs every thread of the same grid, one after another. Nothing to edit here.
#include "ex14_deform_sample.h"

template <typename T>
static void run(T* columns, const T* input, const T* offset, const T* mask, const Ex14Shape& s) {
    const int64_t n = s.channels * s.kernel_h * s.kernel_w * s.batch * s.out_height * s.out_width;
    for (int64_t e = 0; e < n; e++) ex14_im2col_thread(e, columns, input, offset, mask, s);
}

void ex14_deform_sample_cpu(bool f64, void* columns, const void* input, const void* offset, const void* mask,
                            const Ex14Shape& s) {
    if (f64) run((double*)columns, (const double*)input, (const double*)offset, (const double*)mask, s);
    else run((float*)columns, (const float*)input, (const float*)offset, (const float*)mask, s);
}
