// The GPU grid for exercise 14: one thread per entry of the columns, as in the lesson's deformable im2col. Nothing to
// edit here.
#include "ex14_deform_sample.h"

template <typename T>
__global__ void ex14_im2col_kernel(T* columns, const T* input, const T* offset, const T* mask, const Ex14Shape s) {
    ex14_im2col_thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x, columns, input, offset, mask, s);
}

template <typename T>
static cudaError_t launch(T* columns, const T* input, const T* offset, const T* mask, const Ex14Shape& s,
                          cudaStream_t stream) {
    const int64_t n = s.channels * s.kernel_h * s.kernel_w * s.batch * s.out_height * s.out_width;
    ex14_im2col_kernel<T><<<cdiv(n, kEx14Threads), kEx14Threads, 0, stream>>>(columns, input, offset, mask, s);
    return cudaGetLastError();
}

cudaError_t ex14_deform_sample_cuda(bool f64, void* columns, const void* input, const void* offset, const void* mask,
                                    const Ex14Shape& s, cudaStream_t stream) {
    if (f64)
        return launch((double*)columns, (const double*)input, (const double*)offset, (const double*)mask, s, stream);
    return launch((float*)columns, (const float*)input, (const float*)offset, (const float*)mask, s, stream);
}
