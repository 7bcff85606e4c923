// ex3_bias_relu (exercise 3, solution): y[r, c] = max(x[r, c] + bias[c], 0) for a 2-D x of shape [rows, cols].
// Fused: one read of x and one write of y, where x + bias then relu would read and write the whole tensor twice.
#pragma once
#include <cstdint>

#include "kit.h"

void bias_relu_cpu(float* y, const float* x, const float* bias, int64_t rows, int64_t cols);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t bias_relu_cuda(float* y, const float* x, const float* bias, int64_t rows, int64_t cols,
                           cudaStream_t stream);
#endif
