// Exercise 5: the CUDA binding, the file to edit. The task and how it is graded: check.py, beside this file.
#ifdef LABKIT_WITH_CUDA
#include "binding.h"

// Given (ex5_device_guard_given.cpp): checks a and b, allocates c and launches c = a + b on `stream`.
at::Tensor ex5_add2_on(const at::Tensor& a, const at::Tensor& b, cudaStream_t stream);

static at::Tensor ex5_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
    // TODO (roughly 2 lines): everything from here on must happen on a's GPU, and on the stream PyTorch's work on
    // that GPU is queued on, not on stream 0 (binding.h has what you need)
    return ex5_add2_on(a, b, /*stream=*/0);
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("ex5_device_guard", &ex5_cuda_impl); }
#endif
