// The GPU grid for exercise 15: one thread per element of the offsets' gradient, as torchvision's
// deformable_col2im_coord kernel. Nothing to edit here.
#include "ex15_deform_offset_grad.h"

template <typename T>
__global__ void ex15_offset_grad_kernel(T* grad_offset, const T* grad_columns, const T* input, const T* offset,
                                        const T* mask, const Ex15Shape s) {
    ex15_offset_grad_thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x, grad_offset, grad_columns, input, offset,
                            mask, s);
}

template <typename T>
static cudaError_t launch(T* grad_offset, const T* grad_columns, const T* input, const T* offset, const T* mask,
                          const Ex15Shape& s, cudaStream_t stream) {
    const int64_t n = s.batch * s.offset_groups * s.kernel_h * s.kernel_w * 2 * s.out_height * s.out_width;
    ex15_offset_grad_kernel<T>
        <<<cdiv(n, kEx15Threads), kEx15Threads, 0, stream>>>(grad_offset, grad_columns, input, offset, mask, s);
    return cudaGetLastError();
}

cudaError_t ex15_deform_offset_grad_cuda(bool f64, void* grad_offset, const void* grad_columns, const void* input,
                                         const void* offset, const void* mask, const Ex15Shape& s,
                                         cudaStream_t stream) {
    if (f64)
        return launch((double*)grad_offset, (const double*)grad_columns, (const double*)input, (const double*)offset,
                      (const double*)mask, s, stream);
    return launch((float*)grad_offset, (const float*)grad_columns, (const float*)input, (const float*)offset,
                  (const float*)mask, s, stream);
}
