// roi_align_cpu.cpp: RoIAlign forward and backward on the CPU, for every dtype the kit knows.
//
// Plain loops, box by box. Per box the sample positions and weights are computed once (roi_align.h: PH * grid_h
// rows and PW * grid_w columns of them), then reused for every channel: the idea torchvision's CPU kernel calls
// pre_calc, here in its separable form. The 16-bit types are computed in float (load/store in cpu_half.h) and
// rounded once; the backward sums into a float buffer the binding rounds at the end.
#include <type_traits>
#include <vector>

#include "cpu_half.h"
#include "roi_align.h"

// What a dtype is computed in: double for double, float for the rest.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The first box whose batch index is out of range, or -1: checked before any work, so an error leaves nothing
// half done.
template <typename T>
static int64_t first_bad_box(const T* boxes, const RoiAlignShape& s) {
    using A = acc_t<T>;
    for (int64_t k = 0; k < s.boxes; k++) {
        const A index = load(boxes[k * 5]);
        if (!(index > A(-1) && index < A(s.batch))) return k;
    }
    return -1;
}

template <typename T>
static RoiBox<acc_t<T>> box_of(const T* boxes, int64_t k, const RoiAlignShape& s) {
    const T* b = boxes + k * 5;
    return roi_box(load(b[0]), load(b[1]), load(b[2]), load(b[3]), load(b[4]), s);
}

// The box's samples along y (PH * grid_h of them, bin-major) and along x (PW * grid_w).
template <typename A>
static void box_tables(const RoiBox<A>& b, const RoiAlignShape& s, std::vector<AxisSample<A>>& ys,
                       std::vector<AxisSample<A>>& xs) {
    ys.resize(s.pooled_height * b.grid_h);
    xs.resize(s.pooled_width * b.grid_w);
    for (int64_t p = 0; p < s.pooled_height; p++)
        for (int64_t i = 0; i < b.grid_h; i++)
            ys[p * b.grid_h + i] = axis_sample(b.start_h, b.bin_h, b.grid_h, p, i, s.height);
    for (int64_t p = 0; p < s.pooled_width; p++)
        for (int64_t i = 0; i < b.grid_w; i++)
            xs[p * b.grid_w + i] = axis_sample(b.start_w, b.bin_w, b.grid_w, p, i, s.width);
}

template <typename T>
static void forward_loop(T* out, const T* input, const T* boxes, const RoiAlignShape& s) {
    using A = acc_t<T>;
    const int64_t C = s.channels, H = s.height, W = s.width, PH = s.pooled_height, PW = s.pooled_width;
    std::vector<AxisSample<A>> ys, xs;
    for (int64_t k = 0; k < s.boxes; k++) {
        const RoiBox<A> b = box_of(boxes, k, s);
        box_tables(b, s, ys, xs);
        for (int64_t c = 0; c < C; c++) {
            const T* plane = input + (b.batch * C + c) * H * W;
            T* o = out + (k * C + c) * PH * PW;
            for (int64_t ph = 0; ph < PH; ph++) {
                for (int64_t pw = 0; pw < PW; pw++) {
                    A acc = 0;
                    for (int64_t iy = 0; iy < b.grid_h; iy++) {
                        const AxisSample<A>& y = ys[ph * b.grid_h + iy];
                        for (int64_t ix = 0; ix < b.grid_w; ix++) {
                            const AxisSample<A>& x = xs[pw * b.grid_w + ix];
                            if (!(y.inside && x.inside)) continue;  // a sample off the map adds 0
                            const T* lo = plane + y.lo * W;
                            const T* hi = plane + y.hi * W;
                            acc += y.h * x.h * load(lo[x.lo]) + y.h * x.l * load(lo[x.hi]) +
                                   y.l * x.h * load(hi[x.lo]) + y.l * x.l * load(hi[x.hi]);
                        }
                    }
                    store(&o[ph * PW + pw], acc / b.count);
                }
            }
        }
    }
}

// The transpose of the forward: each sample hands its bin's gradient / count back to its four pixels, with the
// same weights. G is the type the sums are kept in (float for the 16-bit dtypes).
template <typename T, typename G>
static void backward_loop(G* grad_input, const T* grad_out, const T* boxes, const RoiAlignShape& s) {
    using A = acc_t<T>;
    const int64_t C = s.channels, H = s.height, W = s.width, PH = s.pooled_height, PW = s.pooled_width;
    std::vector<AxisSample<A>> ys, xs;
    for (int64_t k = 0; k < s.boxes; k++) {
        const RoiBox<A> b = box_of(boxes, k, s);
        box_tables(b, s, ys, xs);
        for (int64_t c = 0; c < C; c++) {
            G* plane = grad_input + (b.batch * C + c) * H * W;
            const T* g = grad_out + (k * C + c) * PH * PW;
            for (int64_t ph = 0; ph < PH; ph++) {
                for (int64_t pw = 0; pw < PW; pw++) {
                    const A grad = load(g[ph * PW + pw]);
                    for (int64_t iy = 0; iy < b.grid_h; iy++) {
                        const AxisSample<A>& y = ys[ph * b.grid_h + iy];
                        for (int64_t ix = 0; ix < b.grid_w; ix++) {
                            const AxisSample<A>& x = xs[pw * b.grid_w + ix];
                            if (!(y.inside && x.inside)) continue;
                            G* lo = plane + y.lo * W;
                            G* hi = plane + y.hi * W;
                            lo[x.lo] += grad * (y.h * x.h) / b.count;  // torchvision's order: (g * w) / count
                            lo[x.hi] += grad * (y.h * x.l) / b.count;
                            hi[x.lo] += grad * (y.l * x.h) / b.count;
                            hi[x.hi] += grad * (y.l * x.l) / b.count;
                        }
                    }
                }
            }
        }
    }
}

template <typename T>
static int64_t forward_checked(void* out, const void* input, const void* boxes, const RoiAlignShape& s) {
    const T* b = static_cast<const T*>(boxes);
    const int64_t bad = first_bad_box(b, s);
    if (bad < 0) forward_loop(static_cast<T*>(out), static_cast<const T*>(input), b, s);
    return bad;
}

template <typename T, typename G>
static int64_t backward_checked(void* grad_input, const void* grad_out, const void* boxes, const RoiAlignShape& s) {
    const T* b = static_cast<const T*>(boxes);
    const int64_t bad = first_bad_box(b, s);
    if (bad < 0) backward_loop(static_cast<G*>(grad_input), static_cast<const T*>(grad_out), b, s);
    return bad;
}

int64_t roi_align_forward_cpu(DType dtype, void* out, const void* input, const void* boxes, const RoiAlignShape& s) {
    switch (dtype) {
        case DType::f64: return forward_checked<double>(out, input, boxes, s);
        case DType::f16: return forward_checked<half_t>(out, input, boxes, s);
        case DType::bf16: return forward_checked<bf16_t>(out, input, boxes, s);
        case DType::f32:
        default: return forward_checked<float>(out, input, boxes, s);
    }
}

int64_t roi_align_backward_cpu(DType dtype, void* grad_input, const void* grad_out, const void* boxes,
                               const RoiAlignShape& s) {
    switch (dtype) {
        case DType::f64: return backward_checked<double, double>(grad_input, grad_out, boxes, s);
        case DType::f16: return backward_checked<half_t, float>(grad_input, grad_out, boxes, s);
        case DType::bf16: return backward_checked<bf16_t, float>(grad_input, grad_out, boxes, s);
        case DType::f32:
        default: return backward_checked<float, float>(grad_input, grad_out, boxes, s);
    }
}
