#include "ex3_bias_relu.h"

void bias_relu_cpu(float* y, const float* x, const float* bias, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const float v = x[r * cols + c] + bias[c];
            y[r * cols + c] = v > 0.f ? v : 0.f;
        }
}
