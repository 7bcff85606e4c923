// deform_conv2d_cpu.cpp: the three sampling kernels of deformable convolution on the CPU, for every dtype the kit
// knows. The matmuls around them (out = weight @ columns, and the two of the backward) are the binding's.
//
//   im2col       columns[c * kk + k][b * L + p] = mask * bilinear(input[b][c], tap k's position at pixel p)
//   col2im       its transpose: each sample hands mask * weight * grad_columns to each of its four pixels
//   coord_grad   grad_offset (dy, dx of each tap) = sum over the group's channels of mask * slope * grad_columns;
//                grad_mask = sum over the channels of bilinear value * grad_columns
//
// The loops run image, offset group, tap, then channel, then output pixel. A tap's samples (position, four pixels,
// weights, mask) depend on the image, the group and the output pixel but not on the channel, so they are computed
// once per (image, group, tap) into a table of L entries and reused by the group's C_in / offset_groups channels:
// torchvision recomputes them for every channel. Innermost, p walks one row of columns and one channel plane, so
// the column writes are sequential; the reads (and col2im's adds) go wherever the offsets point.
//
// Napkin math (a DCNv2 layer of a detector: C_in = C_out = 256, 3 x 3, a 64 x 64 output, one image, float32):
// columns are 2304 x 4096 = 9.4 M samples (38 MB) of 4 loads each; the matmul is 256 x 2304 x 4096 = 2.4 G
// multiply-adds. Measured on the 2-core CPU machine: the forward took 83 ms (torchvision's 162 ms), 27 ms of it the
// matmul (at::bmm on both cores, ~180 GFLOP/s) and the rest the sampling on one core, ~6 ns a sample; forward and
// backward together 266 ms (torchvision's 1221 ms).
//
// The 16-bit types are computed in float (load/store in cpu_half.h): columns and grad_input are float buffers (see
// deform_conv2d.h), grad_offset and grad_mask are rounded once, when stored.
#include <type_traits>
#include <vector>

#include "cpu_half.h"
#include "deform_conv2d.h"

// What a dtype is computed in: double for double, float for the rest. columns and the gradient of the input are
// kept in it too.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// One tap's sample at one output pixel, with the mask that scales it (1 without a mask, as in torchvision).
template <typename A>
struct Tap {
    DeformSample<A> at;
    A mask;
};

// The samples of tap k (kernel row i = k / kernel_w, column j = k % kernel_w) for every output pixel of image b in
// offset group g. offset and mask point at the chunk's first image.
template <typename T, typename A>
static void tap_table(std::vector<Tap<A>>& taps, const T* offset, const T* mask, int64_t b, int64_t g, int64_t k,
                      const DeformConv2dShape& s) {
    const int64_t kk = s.kernel_h * s.kernel_w, L = s.out_height * s.out_width;
    const int64_t i = k / s.kernel_w, j = k % s.kernel_w;
    const T* dy = offset + ((b * s.offset_groups + g) * kk + k) * 2 * L;
    const T* dx = dy + L;
    const T* m = s.has_mask ? mask + ((b * s.offset_groups + g) * kk + k) * L : nullptr;
    taps.resize(L);
    for (int64_t oy = 0; oy < s.out_height; oy++) {
        for (int64_t ox = 0; ox < s.out_width; ox++) {
            const int64_t p = oy * s.out_width + ox;
            const A y = sample_position(oy, i, s.stride_h, s.pad_h, s.dilation_h, A(load(dy[p])));
            const A x = sample_position(ox, j, s.stride_w, s.pad_w, s.dilation_w, A(load(dx[p])));
            taps[p] = {deform_sample(y, x, s.height, s.width), m ? A(load(m[p])) : A(1)};
        }
    }
}

// The four pixels of a sample in one channel plane (deform_conv2d.h), read with cpu_half.h's load.
template <typename T, typename A>
static Corners<A> corners(const T* plane, const DeformSample<A>& t, int64_t width) {
    return sample_corners(plane, t, width, [](T v) { return load(v); });
}

// The (image, offset group, tap) triples of a call, and for each the input channels of the group: what all three
// kernels loop over. Once the tap table is built, body(b, c, row, taps) runs for each channel c of the group (row =
// c * kk + k: its row of columns), then after(b, g, k, taps).
template <typename T, typename A, typename Body, typename After>
static void for_each_tap(const T* offset, const T* mask, const DeformConv2dShape& s, Body body, After after) {
    const int64_t kk = s.kernel_h * s.kernel_w, channels_per_group = s.in_channels / s.offset_groups;
    std::vector<Tap<A>> taps;
    for (int64_t b = 0; b < s.batch; b++) {
        for (int64_t g = 0; g < s.offset_groups; g++) {
            for (int64_t k = 0; k < kk; k++) {
                tap_table(taps, offset, mask, b, g, k, s);
                for (int64_t c = g * channels_per_group; c < (g + 1) * channels_per_group; c++)
                    body(b, c, c * kk + k, taps);
                after(b, g, k, taps);
            }
        }
    }
}

// ----------------------------------------------------------------------------------------------
// The kernels. T is the storage type, A = acc_t<T> what columns and grad_input hold.

template <typename T>
static void im2col_loop(acc_t<T>* columns, const T* input, const T* offset, const T* mask, const DeformConv2dShape& s) {
    using A = acc_t<T>;
    const int64_t L = s.out_height * s.out_width, plane_size = s.height * s.width, n_cols = s.batch * L;
    for_each_tap<T, A>(
        offset, mask, s,
        [&](int64_t b, int64_t c, int64_t row, const std::vector<Tap<A>>& taps) {
            const T* plane = input + (b * s.in_channels + c) * plane_size;
            A* out = columns + row * n_cols + b * L;
            for (int64_t p = 0; p < L; p++) {
                const Tap<A>& t = taps[p];
                out[p] = t.mask * sample_value(t.at, corners(plane, t.at, s.width));
            }
        },
        [](int64_t, int64_t, int64_t, const std::vector<Tap<A>>&) {});
}

template <typename T>
static void col2im_loop(acc_t<T>* grad_input, const acc_t<T>* grad_columns, const T* offset, const T* mask,
                        const DeformConv2dShape& s) {
    using A = acc_t<T>;
    const int64_t L = s.out_height * s.out_width, plane_size = s.height * s.width, n_cols = s.batch * L;
    const int64_t W = s.width;
    for_each_tap<T, A>(
        offset, mask, s,
        [&](int64_t b, int64_t c, int64_t row, const std::vector<Tap<A>>& taps) {
            A* plane = grad_input + (b * s.in_channels + c) * plane_size;
            const A* grad = grad_columns + row * n_cols + b * L;
            for (int64_t p = 0; p < L; p++) {
                const Tap<A>& t = taps[p];
                if (!t.at.inside) continue;  // the sample read nothing: it passes nothing back
                const A hy = A(1) - t.at.ly, hx = A(1) - t.at.lx;
                A* row0 = plane + t.at.y0 * W;
                A* row1 = row0 + W;
                // torchvision's order: (mask * weight) * gradient
                if (t.at.top && t.at.left) row0[t.at.x0] += t.mask * (hy * hx) * grad[p];
                if (t.at.top && t.at.right) row0[t.at.x0 + 1] += t.mask * (hy * t.at.lx) * grad[p];
                if (t.at.bottom && t.at.left) row1[t.at.x0] += t.mask * (t.at.ly * hx) * grad[p];
                if (t.at.bottom && t.at.right) row1[t.at.x0 + 1] += t.mask * (t.at.ly * t.at.lx) * grad[p];
            }
        },
        [](int64_t, int64_t, int64_t, const std::vector<Tap<A>>&) {});
}

// The sums over a group's channels run in three buffers of L, one per output: dy, dx and the mask.
template <typename T>
static void coord_grad_loop(T* grad_offset, T* grad_mask, const acc_t<T>* grad_columns, const T* input, const T* offset,
                            const T* mask, const DeformConv2dShape& s) {
    using A = acc_t<T>;
    const int64_t L = s.out_height * s.out_width, plane_size = s.height * s.width, n_cols = s.batch * L;
    const int64_t kk = s.kernel_h * s.kernel_w;
    std::vector<A> sum_dy(L, A(0)), sum_dx(L, A(0)), sum_mask(L, A(0));
    for_each_tap<T, A>(
        offset, mask, s,
        [&](int64_t b, int64_t c, int64_t row, const std::vector<Tap<A>>& taps) {
            const T* plane = input + (b * s.in_channels + c) * plane_size;
            const A* grad = grad_columns + row * n_cols + b * L;
            for (int64_t p = 0; p < L; p++) {
                const Tap<A>& t = taps[p];
                if (!t.at.reaches && !t.at.nan) continue;  // nothing near: every term is 0
                const Corners<A> v = corners(plane, t.at, s.width);
                sum_dy[p] += t.mask * sample_slope_y(t.at, v) * grad[p];
                sum_dx[p] += t.mask * sample_slope_x(t.at, v) * grad[p];
                if (s.has_mask) sum_mask[p] += grad[p] * sample_value(t.at, v);
            }
        },
        [&](int64_t b, int64_t g, int64_t k, const std::vector<Tap<A>>&) {
            T* dy = grad_offset + ((b * s.offset_groups + g) * kk + k) * 2 * L;
            T* dx = dy + L;
            T* dm = s.has_mask ? grad_mask + ((b * s.offset_groups + g) * kk + k) * L : nullptr;
            for (int64_t p = 0; p < L; p++) {
                store(&dy[p], sum_dy[p]);
                store(&dx[p], sum_dx[p]);
                if (dm) store(&dm[p], sum_mask[p]);
                sum_dy[p] = sum_dx[p] = sum_mask[p] = A(0);
            }
        });
}

// ----------------------------------------------------------------------------------------------
// The launchers: the dtype picks the storage type.

template <typename F>
static void dispatch(DType dtype, F&& f) {
    switch (dtype) {
        case DType::f64: return f(double{});
        case DType::f16: return f(half_t{});
        case DType::bf16: return f(bf16_t{});
        case DType::f32:
        default: return f(float{});
    }
}

void deform_conv2d_im2col_cpu(DType dtype, void* columns, const void* input, const void* offset, const void* mask,
                              const DeformConv2dShape& s) {
    dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        im2col_loop(static_cast<acc_t<T>*>(columns), static_cast<const T*>(input), static_cast<const T*>(offset),
                    static_cast<const T*>(mask), s);
    });
}

void deform_conv2d_col2im_cpu(DType dtype, void* grad_input, const void* grad_columns, const void* offset,
                              const void* mask, const DeformConv2dShape& s) {
    dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        col2im_loop(static_cast<acc_t<T>*>(grad_input), static_cast<const acc_t<T>*>(grad_columns),
                    static_cast<const T*>(offset), static_cast<const T*>(mask), s);
    });
}

void deform_conv2d_coord_grad_cpu(DType dtype, void* grad_offset, void* grad_mask, const void* grad_columns,
                                  const void* input, const void* offset, const void* mask, const DeformConv2dShape& s) {
    dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        coord_grad_loop(static_cast<T*>(grad_offset), static_cast<T*>(grad_mask),
                        static_cast<const acc_t<T>*>(grad_columns), static_cast<const T*>(input),
                        static_cast<const T*>(offset), static_cast<const T*>(mask), s);
    });
}
