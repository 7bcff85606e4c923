// deform_conv2d.cu: the three sampling kernels of deformable convolution on the GPU. The matmuls around them (out =
// weight @ columns, and the two of the backward) are the binding's: the kit's own matmul (lesson 07, tensor cores)
// for float16 and bfloat16, cuBLAS for float32 and float64 (deform_conv2d.cpp says why).
//
//   im2col       columns[c * kk + k][b * L + p] = mask * bilinear(input[b][c], tap k's position at pixel p)
//   col2im       its transpose: each sample adds mask * weight * grad_columns to each of its four pixels (atomics:
//                the samples of many taps and pixels land on one pixel)
//   coord_grad   grad_offset (dy, dx of each tap) = sum over the group's channels of mask * slope * grad_columns;
//                grad_mask = sum over the channels of bilinear value * grad_columns
// The arithmetic of one sample (where it lies, its four pixels' weights, the slopes) is deform_conv2d.h's, the same
// lines the CPU kernels run, so both devices compute the same numbers in the same order.
//
// How the work is cut. A sample's position, pixels and weights depend on the image b, the offset group g, the tap k
// and the output pixel p, but not on the channel: one thread per (b, g, k, p) (im2col: per (b, g, p), walking the
// taps) computes them once and then walks channels of the group, where torchvision's kernels give each (channel, pixel) a thread that recomputes the sample
// (and reloads its two offsets and mask) for every channel. Neighbouring threads are neighbouring pixels p: their
// writes of a row of columns (and reads of grad_columns) are consecutive, and their four reads of a channel plane
// fall near each other, in the same lines of L1. im2col and col2im give each thread kChannelsPerThread channels
// (the grid's y walks the rest of the group), so a detector's layer still has millions of threads; coord_grad sums
// over all the group's channels in one thread, in channel order, so its sums are the same on every run (no
// atomics) and the same as the CPU's.
//
// Napkin math (a DCNv2 layer of a detector: N 8, C_in = C_out = 256, 3 x 3, a 64 x 64 output, offset groups 1):
// columns are 2304 x 32768 = 75 M samples: 151 MB written in float16 (302 MB in float32), ~30-60 us of the H200's
// 4.8 TB/s; each sample reads 4 pixels, from a 8.4 M-element input that stays in the 50 MB L2. The matmul after it
// is 256 x 2304 x 32768 = 19 G multiply-adds: ~60 us on the tensor cores in float16, ~0.8 ms in float32 (no tensor
// cores: TF32 would round the inputs, and torchvision's float32 does not). coord_grad reads the columns' gradient
// once (151 MB) and the input's pixels 4 times per sample, 295 K threads of 256 channels each.
//
// Why two kernels and not one fused (the samples straight into the matmul's tiles, the columns never in memory):
// scripts/experiment_deform_fused.cu is such a kernel, and it took 968 us where im2col then the matmul take 411 us
// (float16, one offset group, an H200: results/2026-12-05-nvidia-h200/deform-fused.json). The layer is bound by its
// gather, and fused, fewer threads gather at once (the accumulators hold the registers) and every tile of pixels
// reads all the weights again; notebook 09 draws it.
//
// Types: T the storage type; A = float (double for double) what a sample is computed in. columns and grad_columns
// are of T on the GPU (16-bit: the tensor cores' input; each sample is rounded once, as torchvision's are), the
// input's gradient is summed in A (atomics on float: a 16-bit sum of hundreds of adds would lose them), and
// grad_offset and grad_mask are rounded to T once, when stored.
#include <type_traits>

#include "cuda_types.cuh"
#include "deform_conv2d.h"

constexpr int kThreads = 256;
constexpr int64_t kChannelsPerThread = 8;

template <typename T>
using acc_t = typename std::conditional<std::is_same<T, double>::value, double, float>::type;

// The tap-samples of a call: (b, g, k, p), p fastest. A thread's index i in 0 .. count - 1 names one.
struct TapIndex { int64_t b, g, k, p; };

__device__ __forceinline__ TapIndex tap_index(int64_t i, const DeformConv2dShape& s) {
    const int64_t L = s.out_height * s.out_width, kk = s.kernel_h * s.kernel_w;
    TapIndex t;
    t.p = i % L;
    i /= L;
    t.k = i % kk;
    i /= kk;
    t.g = i % s.offset_groups;
    t.b = i / s.offset_groups;
    return t;
}

// Tap t's sample and its mask (1 without one), from the offsets of its image, group and tap.
template <typename T, typename A>
__device__ __forceinline__ DeformSample<A> tap_sample(const T* offset, const T* mask, const TapIndex& t,
                                                      const DeformConv2dShape& s, A& m) {
    const int64_t L = s.out_height * s.out_width, kk = s.kernel_h * s.kernel_w;
    const int64_t oy = t.p / s.out_width, ox = t.p % s.out_width;
    const int64_t i = t.k / s.kernel_w, j = t.k % s.kernel_w;
    const int64_t plane = (t.b * s.offset_groups + t.g) * kk + t.k;  // the tap's plane of mask; its dy is 2 * plane
    const A y = sample_position(oy, i, s.stride_h, s.pad_h, s.dilation_h, A(ld(offset[2 * plane * L + t.p])));
    const A x = sample_position(ox, j, s.stride_w, s.pad_w, s.dilation_w, A(ld(offset[(2 * plane + 1) * L + t.p])));
    m = s.has_mask ? A(ld(mask[plane * L + t.p])) : A(1);
    return deform_sample(y, x, s.height, s.width);
}

// The four pixels of a sample in one channel plane (deform_conv2d.h), read with cuda_types.cuh's ld.
template <typename T, typename A>
__device__ __forceinline__ Corners<A> corners(const T* plane, const DeformSample<A>& at, int64_t width) {
    return sample_corners(plane, at, width, [](T v) { return ld(v); });
}

// ----------------------------------------------------------------------------------------------
// The kernels. Grid: x walks the tap-samples (a grid-stride loop), y the slices of kChannelsPerThread channels of
// a group (im2col, col2im).

// im2col: a thread per (b, g, p) and slice of channels, walking the taps, and for each tap its channels. The nine
// taps of neighbouring pixels read overlapping pixels of the same planes, so one thread's (and one warp's) taps
// find them in L1; a thread per tap (as col2im has) measured 402 us against torchvision's 310 at the detector's
// shape in float32 on an H100 (2026-12-05), its taps' reads of a plane spread over blocks far apart. At most 80
// registers (three blocks an SM): unbounded, ptxas unrolls the channel loop into 119-126 and one block fits.
template <typename T>
__global__ void __launch_bounds__(kThreads, 3)
    deform_im2col_kernel(T* __restrict__ columns, const T* __restrict__ input, const T* __restrict__ offset,
                         const T* __restrict__ mask, DeformConv2dShape s, int64_t count) {
    using A = acc_t<T>;
    const int64_t L = s.out_height * s.out_width, kk = s.kernel_h * s.kernel_w, n_cols = s.batch * L;
    const int64_t per_group = s.in_channels / s.offset_groups, plane_size = s.height * s.width;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
        TapIndex t{i / L / s.offset_groups, i / L % s.offset_groups, 0, i % L};
        const int64_t c0 = t.g * per_group + blockIdx.y * kChannelsPerThread;
        const int64_t c1 = min(c0 + kChannelsPerThread, (t.g + 1) * per_group);
        for (t.k = 0; t.k < kk; t.k++) {
            A m;
            const DeformSample<A> at = tap_sample(offset, mask, t, s, m);
            for (int64_t c = c0; c < c1; c++) {
                const T* plane = input + (t.b * s.in_channels + c) * plane_size;
                st(&columns[(c * kk + t.k) * n_cols + t.b * L + t.p],
                   m * sample_value(at, corners(plane, at, s.width)));
            }
        }
    }
}

template <typename T>
__global__ void deform_col2im_kernel(acc_t<T>* __restrict__ grad_input, const T* __restrict__ grad_columns,
                                     const T* __restrict__ offset, const T* __restrict__ mask, DeformConv2dShape s,
                                     int64_t count) {
    using A = acc_t<T>;
    const int64_t L = s.out_height * s.out_width, kk = s.kernel_h * s.kernel_w, n_cols = s.batch * L;
    const int64_t per_group = s.in_channels / s.offset_groups, plane_size = s.height * s.width, W = s.width;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
        const TapIndex t = tap_index(i, s);
        A m;
        const DeformSample<A> at = tap_sample(offset, mask, t, s, m);
        if (!at.inside) continue;  // the sample read nothing: it passes nothing back
        const A hy = A(1) - at.ly, hx = A(1) - at.lx;
        const int64_t c0 = t.g * per_group + blockIdx.y * kChannelsPerThread;
        const int64_t c1 = min(c0 + kChannelsPerThread, (t.g + 1) * per_group);
        for (int64_t c = c0; c < c1; c++) {
            const A grad = ld(grad_columns[(c * kk + t.k) * n_cols + t.b * L + t.p]);
            A* row0 = grad_input + (t.b * s.in_channels + c) * plane_size + at.y0 * W;
            A* row1 = row0 + W;
            // the CPU's order: (mask * weight) * gradient
            if (at.top && at.left) atomicAdd(&row0[at.x0], m * (hy * hx) * grad);
            if (at.top && at.right) atomicAdd(&row0[at.x0 + 1], m * (hy * at.lx) * grad);
            if (at.bottom && at.left) atomicAdd(&row1[at.x0], m * (at.ly * hx) * grad);
            if (at.bottom && at.right) atomicAdd(&row1[at.x0 + 1], m * (at.ly * at.lx) * grad);
        }
    }
}

template <typename T>
__global__ void deform_coord_grad_kernel(T* __restrict__ grad_offset, T* __restrict__ grad_mask,
                                         const T* __restrict__ grad_columns, const T* __restrict__ input,
                                         const T* __restrict__ offset, const T* __restrict__ mask, DeformConv2dShape s,
                                         int64_t count) {
    using A = acc_t<T>;
    const int64_t L = s.out_height * s.out_width, kk = s.kernel_h * s.kernel_w, n_cols = s.batch * L;
    const int64_t per_group = s.in_channels / s.offset_groups, plane_size = s.height * s.width;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
        const TapIndex t = tap_index(i, s);
        A m;
        const DeformSample<A> at = tap_sample(offset, mask, t, s, m);
        A sum_dy = A(0), sum_dx = A(0), sum_mask = A(0);
        if (at.reaches || at.nan) {  // else every term is 0
            for (int64_t c = t.g * per_group; c < (t.g + 1) * per_group; c++) {
                const T* plane = input + (t.b * s.in_channels + c) * plane_size;
                const A grad = ld(grad_columns[(c * kk + t.k) * n_cols + t.b * L + t.p]);
                const Corners<A> v = corners(plane, at, s.width);
                sum_dy += m * sample_slope_y(at, v) * grad;
                sum_dx += m * sample_slope_x(at, v) * grad;
                if (s.has_mask) sum_mask += grad * sample_value(at, v);
            }
        }
        const int64_t plane = (t.b * s.offset_groups + t.g) * kk + t.k;
        st(&grad_offset[2 * plane * L + t.p], sum_dy);
        st(&grad_offset[(2 * plane + 1) * L + t.p], sum_dx);
        if (s.has_mask) st(&grad_mask[plane * L + t.p], sum_mask);
    }
}

// ----------------------------------------------------------------------------------------------
// The launchers: one thread per tap-sample, up to 2^20 blocks (the grid-stride loop takes the rest), and for
// im2col and col2im a grid row per slice of kChannelsPerThread channels. Nothing to do launches nothing.

static dim3 tap_grid(int64_t count, int64_t slices) {
    const int64_t blocks = (count + kThreads - 1) / kThreads;
    return dim3(unsigned(blocks < (int64_t(1) << 20) ? blocks : (int64_t(1) << 20)), unsigned(slices));
}

static int64_t tap_count(const DeformConv2dShape& s) {
    return s.batch * s.offset_groups * s.kernel_h * s.kernel_w * s.out_height * s.out_width;
}

static int64_t channel_slices(const DeformConv2dShape& s) {
    return (s.in_channels / s.offset_groups + kChannelsPerThread - 1) / kChannelsPerThread;
}

cudaError_t deform_conv2d_im2col_cuda(DType dtype, void* columns, const void* input, const void* offset,
                                      const void* mask, const DeformConv2dShape& s, cudaStream_t stream) {
    const int64_t count = s.batch * s.offset_groups * s.out_height * s.out_width;  // (b, g, p): the taps inside
    if (count == 0 || s.in_channels == 0) return cudaSuccess;
    if (channel_slices(s) > 65535) return cudaErrorInvalidConfiguration;  // the binding refuses such groups first
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        deform_im2col_kernel<T><<<tap_grid(count, channel_slices(s)), kThreads, 0, stream>>>(
            static_cast<T*>(columns), static_cast<const T*>(input), static_cast<const T*>(offset),
            static_cast<const T*>(mask), s, count);
        return cudaGetLastError();
    });
}

cudaError_t deform_conv2d_col2im_cuda(DType dtype, void* grad_input, const void* grad_columns, const void* offset,
                                      const void* mask, const DeformConv2dShape& s, cudaStream_t stream) {
    const int64_t count = tap_count(s);
    if (count == 0 || s.in_channels == 0) return cudaSuccess;
    if (channel_slices(s) > 65535) return cudaErrorInvalidConfiguration;
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        deform_col2im_kernel<T><<<tap_grid(count, channel_slices(s)), kThreads, 0, stream>>>(
            static_cast<acc_t<T>*>(grad_input), static_cast<const T*>(grad_columns), static_cast<const T*>(offset),
            static_cast<const T*>(mask), s, count);
        return cudaGetLastError();
    });
}

cudaError_t deform_conv2d_coord_grad_cuda(DType dtype, void* grad_offset, void* grad_mask, const void* grad_columns,
                                          const void* input, const void* offset, const void* mask,
                                          const DeformConv2dShape& s, cudaStream_t stream) {
    const int64_t count = tap_count(s);
    if (count == 0) return cudaSuccess;
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        deform_coord_grad_kernel<T><<<tap_grid(count, 1), kThreads, 0, stream>>>(
            static_cast<T*>(grad_offset), static_cast<T*>(grad_mask), static_cast<const T*>(grad_columns),
            static_cast<const T*>(input), static_cast<const T*>(offset), static_cast<const T*>(mask), s, count);
        return cudaGetLastError();
    });
}
