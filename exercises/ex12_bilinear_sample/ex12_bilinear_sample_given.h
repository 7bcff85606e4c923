// What exercise 12 gives: RoIAlign's forward around your bilinear sample (each box's bins, the sampling points in
// each bin, their average) and the launchers (the binding includes this alone, so an edit of
// ex12_bilinear_sample.h recompiles the kernel files, not the binding). Nothing to edit here.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

constexpr int kEx12Threads = 256;

// One call: K boxes over an input of N images x C channels x H x W, pooled to PH x PW bins.
struct Ex12Shape {
    int64_t boxes, batch, channels, height, width, pooled_height, pooled_width, sampling_ratio;
    double spatial_scale;
    bool aligned;
};

// Yours (ex12_bilinear_sample.h): the value of plane (H x W) at the point (y, x).
template <typename T>
KIT_HD inline T bilinear(const T* plane, int64_t H, int64_t W, T y, T x);

// Output element i of (K, C, PH, PW): box k's bin (ph, pw) in channel c, the average of the bin's grid_h x grid_w
// bilinear samples, in torchvision's order of operations. One thread per element, on the GPU as on the CPU.
template <typename T>
KIT_HD inline void ex12_roi_align_thread(int64_t i, T* out, const T* input, const T* boxes, const Ex12Shape& s) {
    const int64_t C = s.channels, H = s.height, W = s.width, PH = s.pooled_height, PW = s.pooled_width;
    if (i >= s.boxes * C * PH * PW) return;
    const int64_t pw = i % PW, ph = (i / PW) % PH, c = (i / (PW * PH)) % C, k = i / (PW * PH * C);
    const T* b = boxes + k * 5;  // batch index, x1, y1, x2, y2
    if (!(b[0] > T(-1) && b[0] < T(s.batch))) {  // an image that is not there: zeros
        out[i] = T(0);
        return;
    }
    const int64_t n = int64_t(b[0]);
    const T scale = T(s.spatial_scale), offset = s.aligned ? T(0.5) : T(0);
    const T start_w = b[1] * scale - offset, start_h = b[2] * scale - offset;
    T roi_w = b[3] * scale - offset - start_w, roi_h = b[4] * scale - offset - start_h;
    if (!s.aligned) {  // the legacy version makes a box at least 1 x 1 pixel
        roi_w = roi_w < T(1) ? T(1) : roi_w;
        roi_h = roi_h < T(1) ? T(1) : roi_h;
    }
    const T bin_h = roi_h / T(PH), bin_w = roi_w / T(PW);
    // sampling_ratio <= 0: ceil(bin size) samples per bin along each axis (none for an inverted aligned box)
    const double gh = ceil(double(bin_h)), gw = ceil(double(bin_w));
    const int64_t grid_h = s.sampling_ratio > 0 ? s.sampling_ratio : (gh > 0 ? int64_t(gh) : 0);
    const int64_t grid_w = s.sampling_ratio > 0 ? s.sampling_ratio : (gw > 0 ? int64_t(gw) : 0);
    const T count = T(grid_h * grid_w > 1 ? grid_h * grid_w : 1);
    const T* plane = input + (n * C + c) * H * W;
    T acc = T(0);
    for (int64_t iy = 0; iy < grid_h; iy++) {
        const T y = start_h + T(ph) * bin_h + T(float(iy) + 0.5f) * bin_h / T(grid_h);
        for (int64_t ix = 0; ix < grid_w; ix++) {
            const T x = start_w + T(pw) * bin_w + T(float(ix) + 0.5f) * bin_w / T(grid_w);
            acc += bilinear(plane, H, W, y, x);
        }
    }
    out[i] = acc / count;
}

void ex12_bilinear_sample_cpu(bool f64, void* out, const void* input, const void* boxes, const Ex12Shape& s);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex12_bilinear_sample_cuda(bool f64, void* out, const void* input, const void* boxes, const Ex12Shape& s,
                                      cudaStream_t stream);
#endif
