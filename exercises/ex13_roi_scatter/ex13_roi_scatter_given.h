// What exercise 13 gives: RoIAlign's forward, the bilinear neighbours of a point (exercise 12's answer, as the
// pixels and weights it found), the backward around your scatter (each grad_out element's box, bin and sampling
// points), an atomic add for both devices, and the launchers (the binding includes this alone, so an edit of
// ex13_roi_scatter.h recompiles the kernel files, not the binding). Nothing to edit here.
#pragma once
#include <cmath>
#include <cstdint>

#include "kit.h"

constexpr int kEx13Threads = 256;

// One call: K boxes over an input of N images x C channels x H x W, pooled to PH x PW bins.
struct Ex13Shape {
    int64_t boxes, batch, channels, height, width, pooled_height, pooled_width, sampling_ratio;
    double spatial_scale;
    bool aligned;
};

// The four pixels around the point (y, x) of an H x W plane and their weights, by RoIAlign's edge rules
// (exercise 12): (y_low, x_low) weighs hy * hx, (y_low, x_high) hy * lx, (y_high, x_low) ly * hx, (y_high, x_high)
// ly * lx. `inside` is false for a point more than a pixel off the map, which reads (and receives) nothing: its
// pixels are then -1, outside the plane, as in torchvision's kernels.
template <typename T>
struct Neighbours {
    bool inside;
    int64_t y_low, y_high, x_low, x_high;
    T ly, lx, hy, hx;
};

template <typename T>
KIT_HD inline Neighbours<T> neighbours(int64_t H, int64_t W, T y, T x) {
    Neighbours<T> n{false, -1, -1, -1, -1, T(0), T(0), T(0), T(0)};
    if (y < T(-1) || y > T(H) || x < T(-1) || x > T(W)) return n;
    n.inside = true;
    if (y <= T(0)) y = T(0);
    if (x <= T(0)) x = T(0);
    n.y_low = int64_t(y);
    n.x_low = int64_t(x);
    if (n.y_low >= H - 1) {
        n.y_high = n.y_low = H - 1;
        y = T(n.y_low);
    } else {
        n.y_high = n.y_low + 1;
    }
    if (n.x_low >= W - 1) {
        n.x_high = n.x_low = W - 1;
        x = T(n.x_low);
    } else {
        n.x_high = n.x_low + 1;
    }
    n.ly = y - T(n.y_low);
    n.lx = x - T(n.x_low);
    n.hy = T(1) - n.ly;
    n.hx = T(1) - n.lx;
    return n;
}

// *p += v, atomically on the GPU (many threads add into the same pixel at once); the CPU runs the threads one after
// another, so a plain add is atomic there.
template <typename T>
KIT_HD inline void atomic_add(T* p, T v) {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}

// Yours (ex13_roi_scatter.h): one sample's share g of its bin's gradient, handed back to the pixels of plane
// (H x W, of grad_input) that the forward read at (y, x).
template <typename T>
KIT_HD inline void scatter_sample(T* plane, int64_t H, int64_t W, T y, T x, T g);

// Box k's geometry, as the forward and the backward both need it: its image (-1 if that is not there), its first
// sample's corner, a bin's size, the samples per bin along each axis and their count.
template <typename T>
struct Ex13Box {
    int64_t image, grid_h, grid_w;
    T start_h, start_w, bin_h, bin_w, count;
};

template <typename T>
KIT_HD inline Ex13Box<T> ex13_box(const T* b, const Ex13Shape& s) {
    Ex13Box<T> r;
    r.image = b[0] > T(-1) && b[0] < T(s.batch) ? int64_t(b[0]) : -1;
    const T scale = T(s.spatial_scale), offset = s.aligned ? T(0.5) : T(0);
    r.start_w = b[1] * scale - offset;
    r.start_h = b[2] * scale - offset;
    T roi_w = b[3] * scale - offset - r.start_w, roi_h = b[4] * scale - offset - r.start_h;
    if (!s.aligned) {  // the legacy version makes a box at least 1 x 1 pixel
        roi_w = roi_w < T(1) ? T(1) : roi_w;
        roi_h = roi_h < T(1) ? T(1) : roi_h;
    }
    r.bin_h = roi_h / T(s.pooled_height);
    r.bin_w = roi_w / T(s.pooled_width);
    const double gh = ceil(double(r.bin_h)), gw = ceil(double(r.bin_w));
    r.grid_h = s.sampling_ratio > 0 ? s.sampling_ratio : (gh > 0 ? int64_t(gh) : 0);
    r.grid_w = s.sampling_ratio > 0 ? s.sampling_ratio : (gw > 0 ? int64_t(gw) : 0);
    r.count = T(r.grid_h * r.grid_w > 1 ? r.grid_h * r.grid_w : 1);
    return r;
}

// Where sample (iy, ix) of bin (ph, pw) falls, in torchvision's order of operations.
template <typename T>
KIT_HD inline T ex13_sample_y(const Ex13Box<T>& b, int64_t ph, int64_t iy) {
    return b.start_h + T(ph) * b.bin_h + T(float(iy) + 0.5f) * b.bin_h / T(b.grid_h);
}
template <typename T>
KIT_HD inline T ex13_sample_x(const Ex13Box<T>& b, int64_t pw, int64_t ix) {
    return b.start_w + T(pw) * b.bin_w + T(float(ix) + 0.5f) * b.bin_w / T(b.grid_w);
}

// Element i of (K, C, PH, PW) is box k's bin (ph, pw) in channel c.
struct Ex13Bin {
    int64_t k, c, ph, pw;
};
KIT_HD inline Ex13Bin ex13_bin(int64_t i, const Ex13Shape& s) {
    const int64_t PH = s.pooled_height, PW = s.pooled_width;
    return {i / (PW * PH * s.channels), (i / (PW * PH)) % s.channels, (i / PW) % PH, i % PW};
}

// The forward, given: output element i, the average of its bin's bilinear samples.
template <typename T>
KIT_HD inline void ex13_forward_thread(int64_t i, T* out, const T* input, const T* boxes, const Ex13Shape& s) {
    if (i >= s.boxes * s.channels * s.pooled_height * s.pooled_width) return;
    const Ex13Bin e = ex13_bin(i, s);
    const Ex13Box<T> b = ex13_box(boxes + e.k * 5, s);
    T acc = T(0);
    if (b.image >= 0) {
        const int64_t H = s.height, W = s.width;
        const T* plane = input + (b.image * s.channels + e.c) * H * W;
        for (int64_t iy = 0; iy < b.grid_h; iy++) {
            for (int64_t ix = 0; ix < b.grid_w; ix++) {
                const Neighbours<T> n = neighbours(H, W, ex13_sample_y(b, e.ph, iy), ex13_sample_x(b, e.pw, ix));
                if (!n.inside) continue;
                acc += n.hy * n.hx * plane[n.y_low * W + n.x_low] + n.hy * n.lx * plane[n.y_low * W + n.x_high] +
                       n.ly * n.hx * plane[n.y_high * W + n.x_low] + n.ly * n.lx * plane[n.y_high * W + n.x_high];
            }
        }
    }
    out[i] = acc / b.count;
}

// The backward around yours: grad_out element i (one thread each, as torchvision's kernel) hands grad_out[i] /
// count to each of its bin's samples, through scatter_sample, into grad_input's plane of its image and channel.
template <typename T>
KIT_HD inline void ex13_backward_thread(int64_t i, T* grad_input, const T* grad_out, const T* boxes,
                                        const Ex13Shape& s) {
    if (i >= s.boxes * s.channels * s.pooled_height * s.pooled_width) return;
    const Ex13Bin e = ex13_bin(i, s);
    const Ex13Box<T> b = ex13_box(boxes + e.k * 5, s);
    if (b.image < 0) return;
    const int64_t H = s.height, W = s.width;
    T* plane = grad_input + (b.image * s.channels + e.c) * H * W;
    const T g = grad_out[i] / b.count;
    for (int64_t iy = 0; iy < b.grid_h; iy++)
        for (int64_t ix = 0; ix < b.grid_w; ix++)
            scatter_sample(plane, H, W, ex13_sample_y(b, e.ph, iy), ex13_sample_x(b, e.pw, ix), g);
}

// backward: false runs the forward (out = (K, C, PH, PW)); true adds the gradient of grad_out into grad_input.
void ex13_roi_scatter_cpu(bool backward, bool f64, void* out, const void* in, const void* boxes, const Ex13Shape& s);
#ifdef LABKIT_WITH_CUDA
#include <cuda_runtime_api.h>
cudaError_t ex13_roi_scatter_cuda(bool backward, bool f64, void* out, const void* in, const void* boxes,
                                  const Ex13Shape& s, cudaStream_t stream);
#endif
