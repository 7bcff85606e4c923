// roi_align.cu: RoIAlign on the GPU: two forwards (a gather, one per input layout) and two backwards (a scatter):
// which backward is faster is the lesson's question.
//
// Forward: out[k][c][ph][pw] = (1 / count) * sum over the bin's grid_h x grid_w samples (y, x) of the bilinear
// interpolation of input[b][c] at (y, x), b = box k's image. Both versions compute a box's sample positions
// (roi_align.h: PH * grid_h along y, PW * grid_w along x, separable) once per block into shared memory, as Taps of
// 16 bytes (float), instead of once per thread and sample as torchvision does; a block never straddles two boxes.
//   1. roi_align_forward_kernel                (N, C, H, W) input. One thread per output element, as in
//                                              torchvision; the element's index in the box, j = (c * PH + ph) * PW
//                                              + pw, so a warp covers 32 neighbouring bins of one channel plane. The
//                                              grid is (boxes, blocks per box), and blocks run box-fastest: the
//                                              blocks resident together read the same few channel planes of every
//                                              box, which L2 keeps.
//   2. roi_align_forward_channels_last_kernel  (N, H, W, C) input, read in place: a warp is one bin in 32 channels,
//                                              so each corner load is one 128-byte line (float32).
// Measured on the H200 (2026-12-02, the benchmark's case below, float32, Nsight Compute and
// scripts/experiment_roi_align_variants.py): version 1 executes 207 M instructions to torchvision's 240 M, with an
// L2 hit rate of 82% to 37%: 298 us to 336. Version 2 executes 156 M: 276 us. Copying an (N, C, H, W) input to
// channels-last first costs 196 us on its own, so version 2 is only for inputs stored that way already.
//
// Backward: the same sums read backwards. Each (bin, sample) hands grad_out / count times each of its four
// bilinear weights to four input pixels. Different bins (and different boxes) share pixels, so the adds must be
// atomic. Two versions (ops.roi_align(..., version=...) picks the backward; "fast" is op.py's FAST):
//   1. roi_align_backward_atomic_kernel        torchvision's: one thread per grad_out element, atomicAdd into
//                                              grad_input (N, C, H, W). A warp is 32 bins of one channel, so its
//                                              32 adds go to 32 scattered addresses of one plane (up to 32 memory
//                                              transactions per instruction), and to one address where bins are
//                                              under a pixel wide (32 adds on one word, done one after another).
//   2. roi_align_backward_channels_last_kernel the same adds, but a warp is one bin in 32 channels, and
//                                              grad_input is laid out (N, H, W, C): the 32 adds of an instruction
//                                              go to 32 consecutive floats, one 128-byte line. Never two lanes on
//                                              one address, 4 sectors per instruction instead of up to 32. The
//                                              gradient comes back channels-last (PyTorch accepts any strides).
// 16-bit dtypes: the adds go to a float buffer, rounded to the dtype once at the end (the binding does it). An
// atomicAdd on __half exists (sm_70+, __nv_bfloat16 natively on sm_90), but a 16-bit sum keeps 11 (bfloat16: 8)
// significant bits: into a pixel that holds 1.0 already, any float16 add under 2^-11 (~5e-4) rounds away, and
// overlapping boxes make hundreds of adds per pixel. float keeps them, and float atomics are the fastest kind;
// the buffer costs a 111 MB zeroing and one rounding pass. float64 adds in double (atomicAdd on double: sm_60+).
//
// Napkin math (H200; the benchmark: 1000 boxes, C = 256, 7 x 7 bins, 2 x 2 samples, N = 2, a 200 x 272 map):
// - forward: 12.5 M outputs, 4 samples x 4 loads = 200 M gathers from a 111 MB input (float32). Neighbouring
//   samples share pixels and lines, so most loads hit L1/L2: the time goes to load instructions and their
//   latency, ~0.1-0.2 ms, not to DRAM (111 MB at 4.3 TB/s is 26 us).
// - backward: the same 200 M adds, atomics to L2 (which executes them). Version 1 issues up to 32 L2 transactions
//   per warp instruction: ~200 M transactions; version 2 ~25 M (4 sectors per 32 adds). Plus zeroing the 111 MB
//   gradient first (~26 us) and, for 16 bits, rounding it (~40 us).
#include <climits>
#include <cstdint>
#include <type_traits>

#include "cuda_types.cuh"
#include "roi_align.h"

// What a dtype is computed (and its gradient summed) in: double for double, float for the rest.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

constexpr int kThreads = 256;
// Samples per axis kept in shared memory: a box with more (sampling_ratio <= 0 on a box over ~18 bins' worth of
// pixels, with 7 bins) computes them on the fly instead, with the same function, so the results are the same.
constexpr int kMaxTable = 128;
constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on gridDim.y

// ----------------------------------------------------------------------------------------------
// Device helpers

template <typename T>
__device__ __forceinline__ RoiBox<acc_t<T>> box_of(const T* boxes, int64_t k, const RoiAlignShape& s) {
    const T* b = boxes + k * 5;  // every thread of the block loads the same 5 numbers: one broadcast each
    return roi_box(ld(b[0]), ld(b[1]), ld(b[2]), ld(b[3]), ld(b[4]), s);
}

// ----------------------------------------------------------------------------------------------
// The box's samples, once per block. The forwards keep each as a Tap: a sample along one axis as a forward reads
// it, its two pixels already multiplied by the layout's stride along that axis (rows: W, or W * C channels-last;
// columns: 1, or C), so a corner's address is one add. O is int wherever the whole image's offsets fit one, which
// makes an entry 16 bytes in float (one shared-memory load) against AxisSample's 32, and spares the 64-bit
// multiplies.

template <typename A, typename O>
struct Tap {
    O lo, hi;  // lo < 0: the sample lies outside the map and contributes 0 (then hi = 0)
    A l, h;
};

template <typename A, typename O>
__device__ __forceinline__ Tap<A, O> tap_of(const AxisSample<A>& a, int64_t stride) {
    if (!a.inside) return Tap<A, O>{O(-1), O(0), A(0), A(0)};
    return Tap<A, O>{O(a.lo * stride), O(a.hi * stride), a.l, a.h};
}

// What a kernel keeps of a sample: the backwards the AxisSample itself (SameSample), the forwards a Tap (MakeTap,
// with the layout's strides). Called with the axis: y (true) or x.
template <typename A>
struct SameSample {
    __device__ __forceinline__ AxisSample<A> operator()(const AxisSample<A>& a, bool) const { return a; }
};

template <typename A, typename O>
struct MakeTap {
    int64_t row_stride, col_stride;
    __device__ __forceinline__ Tap<A, O> operator()(const AxisSample<A>& a, bool y) const {
        return tap_of<A, O>(a, y ? row_stride : col_stride);
    }
};

// The block's box samples, as `make` keeps them (entries E), in shared memory when they fit (then `tables` is
// true). Every thread must call fill_tables (it ends with a barrier), before any thread returns.
template <typename E>
struct BoxTables {
    E y[kMaxTable], x[kMaxTable];
};

template <typename E, typename A, typename Make>
__device__ __forceinline__ bool fill_tables(BoxTables<E>& t, const RoiBox<A>& b, const RoiAlignShape& s, Make make) {
    const int64_t ny = s.pooled_height * b.grid_h, nx = s.pooled_width * b.grid_w;
    const bool fits = ny <= kMaxTable && nx <= kMaxTable;
    const int tid = threadIdx.x + threadIdx.y * blockDim.x;
    if (fits) {  // kMaxTable <= threads per block: one entry per thread at most
        if (tid < ny)
            t.y[tid] = make(axis_sample(b.start_h, b.bin_h, b.grid_h, tid / b.grid_h, tid % b.grid_h, s.height), true);
        if (tid < nx)
            t.x[tid] = make(axis_sample(b.start_w, b.bin_w, b.grid_w, tid / b.grid_w, tid % b.grid_w, s.width), false);
    }
    __syncthreads();
    return fits;
}

template <typename E, typename A, typename Make>
__device__ __forceinline__ E y_sample(const BoxTables<E>& t, bool tables, const RoiBox<A>& b, const RoiAlignShape& s,
                                      int64_t ph, int64_t iy, Make make) {
    return tables ? t.y[ph * b.grid_h + iy] : make(axis_sample(b.start_h, b.bin_h, b.grid_h, ph, iy, s.height), true);
}

template <typename E, typename A, typename Make>
__device__ __forceinline__ E x_sample(const BoxTables<E>& t, bool tables, const RoiBox<A>& b, const RoiAlignShape& s,
                                      int64_t pw, int64_t ix, Make make) {
    return tables ? t.x[pw * b.grid_w + ix] : make(axis_sample(b.start_w, b.bin_w, b.grid_w, pw, ix, s.width), false);
}

// The bin's average at one pixel offset `base` (the image's plane, or its channel in channels-last): sum over the
// samples of the four corners, each weighted by its y weight times its x weight.
template <typename T, typename A, typename O>
__device__ __forceinline__ A bin_average(const T* __restrict__ base, const BoxTables<Tap<A, O>>& t, bool tables,
                                         const RoiBox<A>& b, const RoiAlignShape& s, int64_t ph, int64_t pw,
                                         MakeTap<A, O> make) {
    A acc = 0;
    for (int iy = 0; iy < int(b.grid_h); iy++) {
        const Tap<A, O> y = y_sample(t, tables, b, s, ph, iy, make);
        for (int ix = 0; ix < int(b.grid_w); ix++) {
            const Tap<A, O> x = x_sample(t, tables, b, s, pw, ix, make);
            if ((y.lo | x.lo) < 0) continue;
            acc += y.h * x.h * ld(base[y.lo + x.lo]) + y.h * x.l * ld(base[y.lo + x.hi]) +
                   y.l * x.h * ld(base[y.hi + x.lo]) + y.l * x.l * ld(base[y.hi + x.hi]);
        }
    }
    return acc / b.count;
}

// ----------------------------------------------------------------------------------------------
// Forward 1, input (N, C, H, W): block (k, by) covers elements j = by * 256 + tid, by * 256 + tid + gridDim.y * 256,
// ... of box k. O is also the type of j: int wherever a box's C * PH * PW elements and an image plane fit one
// (always, in practice), because splitting j into (c, ph, pw) takes two divisions and a 64-bit division is a
// ~70-instruction subroutine on a GPU, a 32-bit one a few instructions.

template <typename T, typename O>
__global__ void roi_align_forward_kernel(T* __restrict__ out, const T* __restrict__ input, const T* __restrict__ boxes,
                                         const RoiAlignShape s) {
    using A = acc_t<T>;
    __shared__ BoxTables<Tap<A, O>> t;
    const int64_t k = blockIdx.x;
    const RoiBox<A> b = box_of(boxes, k, s);
    const MakeTap<A, O> make{s.width, 1};
    const bool tables = fill_tables(t, b, s, make);
    const O PH = O(s.pooled_height), PW = O(s.pooled_width);
    const O per_box = O(s.channels) * PH * PW;
    for (O j = O(blockIdx.y) * O(blockDim.x) + O(threadIdx.x); j < per_box; j += O(gridDim.y) * O(blockDim.x)) {
        const O pw = j % PW, ph = (j / PW) % PH, c = j / (PW * PH);
        // an index out of range reads nothing: zeros (the CPU path refuses it instead)
        const A v = b.batch < 0 ? A(0)
                                : bin_average(input + (b.batch * s.channels + c) * s.height * s.width, t, tables, b, s,
                                              ph, pw, make);
        st(&out[k * int64_t(per_box) + j], v);
    }
}

// ----------------------------------------------------------------------------------------------
// Forward 2, input (N, H, W, C) (channels-last): the channels-last backward's layout, for a gather. Block (k, cg) is
// box k, channels cg * 32 ..: lane = channel, and the 8 warps take the box's bins in turn. Each corner load of a
// warp is 32 consecutive channels of one pixel, one 128-byte line (float32), where forward 1's 32 lanes are 32 bins
// of one plane, several lines apart. The results go out through shared memory: a warp holds one bin of 32
// channels, PH * PW elements apart in out (K, C, PH, PW), so the block first gathers its 32 x PH * PW outputs,
// then writes them as the one contiguous run they are. Bins past kStageBins (more than 8 x 8) are written directly.

constexpr int kLanes = 32, kWarps = 8, kStageBins = 64;

template <typename T, typename O>
__global__ void roi_align_forward_channels_last_kernel(T* __restrict__ out, const T* __restrict__ input,
                                                       const T* __restrict__ boxes, const RoiAlignShape s) {
    using A = acc_t<T>;
    __shared__ BoxTables<Tap<A, O>> t;
    __shared__ A stage[kStageBins][kLanes + 1];  // [bin][lane]; the pad makes the column reads conflict-free
    const int64_t k = blockIdx.x, C = s.channels, bins = s.pooled_height * s.pooled_width;
    const RoiBox<A> b = box_of(boxes, k, s);
    const MakeTap<A, O> make{s.width * C, C};
    const bool tables = fill_tables(t, b, s, make);
    const int64_t c0 = int64_t(blockIdx.y) * kLanes, c = c0 + threadIdx.x;
    const bool staged = bins <= kStageBins;
    const bool reads = b.batch >= 0 && c < C;
    const T* image = input + (reads ? b.batch * s.height * s.width * C + c : 0);
    for (int64_t bin = threadIdx.y; bin < bins; bin += kWarps) {
        const int64_t ph = bin / s.pooled_width, pw = bin % s.pooled_width;
        const A v = reads ? bin_average(image, t, tables, b, s, ph, pw, make) : A(0);
        if (staged) stage[bin][threadIdx.x] = v;
        else if (c < C) st(&out[(k * C + c) * bins + bin], v);
    }
    if (!staged) return;  // the same for the whole block: no thread waits at the barrier below for one that left
    __syncthreads();
    // channels c0 .. c0 + nc - 1 of box k: out[(k * C + c0) * bins + e] for e < nc * bins, consecutive threads on
    // consecutive elements
    const int64_t nc = C - c0 < kLanes ? C - c0 : kLanes;
    T* run = out + (k * C + c0) * bins;
    for (int64_t e = threadIdx.x + threadIdx.y * kLanes; e < nc * bins; e += kLanes * kWarps)
        st(&run[e], stage[e % bins][e / bins]);
}

// ----------------------------------------------------------------------------------------------
// Backward 1: atomics into (N, C, H, W), one thread per grad_out element (the forward's layout).

template <typename T>
__global__ void roi_align_backward_atomic_kernel(acc_t<T>* __restrict__ grad_input, const T* __restrict__ grad_out,
                                                 const T* __restrict__ boxes, const RoiAlignShape s) {
    using A = acc_t<T>;
    __shared__ BoxTables<AxisSample<A>> t;
    const int64_t k = blockIdx.x;
    const RoiBox<A> b = box_of(boxes, k, s);
    const bool tables = fill_tables(t, b, s, SameSample<A>{});
    if (b.batch < 0) return;  // after the barrier: every thread has passed it
    const int64_t PH = s.pooled_height, PW = s.pooled_width, H = s.height, W = s.width;
    const int64_t per_box = s.channels * PH * PW;
    for (int64_t j = int64_t(blockIdx.y) * blockDim.x + threadIdx.x; j < per_box;
         j += int64_t(gridDim.y) * blockDim.x) {
        const int64_t pw = j % PW, ph = (j / PW) % PH, c = j / (PW * PH);
        const A grad = ld(grad_out[k * per_box + j]);
        A* plane = grad_input + (b.batch * s.channels + c) * H * W;
        for (int64_t iy = 0; iy < b.grid_h; iy++) {
            const AxisSample<A> y = y_sample(t, tables, b, s, ph, iy, SameSample<A>{});
            for (int64_t ix = 0; ix < b.grid_w; ix++) {
                const AxisSample<A> x = x_sample(t, tables, b, s, pw, ix, SameSample<A>{});
                if (!(y.inside && x.inside)) continue;
                atomicAdd(&plane[y.lo * W + x.lo], grad * (y.h * x.h) / b.count);
                atomicAdd(&plane[y.lo * W + x.hi], grad * (y.h * x.l) / b.count);
                atomicAdd(&plane[y.hi * W + x.lo], grad * (y.l * x.h) / b.count);
                atomicAdd(&plane[y.hi * W + x.hi], grad * (y.l * x.l) / b.count);
            }
        }
    }
}

// ----------------------------------------------------------------------------------------------
// Backward 2: atomics into (N, H, W, C). Block (k, cg) is box k, channels cg * 32 .. cg * 32 + 31: lane = channel
// (threadIdx.x), and its 8 warps (threadIdx.y) take the box's bins in turn (forward 2's blocks). The grad_out loads are 32 channels of
// one bin, PH * PW elements apart; the 8 warps read neighbouring bins at once, so the lines they share come from L1.

template <typename T>
__global__ void roi_align_backward_channels_last_kernel(acc_t<T>* __restrict__ grad_nhwc,
                                                        const T* __restrict__ grad_out, const T* __restrict__ boxes,
                                                        const RoiAlignShape s) {
    using A = acc_t<T>;
    __shared__ BoxTables<AxisSample<A>> t;
    const int64_t k = blockIdx.x;
    const RoiBox<A> b = box_of(boxes, k, s);
    const bool tables = fill_tables(t, b, s, SameSample<A>{});
    const int64_t C = s.channels, PH = s.pooled_height, PW = s.pooled_width, H = s.height, W = s.width;
    const int64_t c = int64_t(blockIdx.y) * kLanes + threadIdx.x;
    if (b.batch < 0 || c >= C) return;
    A* image = grad_nhwc + b.batch * H * W * C + c;  // pixel (y, x) of channel c: image[(y * W + x) * C]
    for (int64_t bin = threadIdx.y; bin < PH * PW; bin += kWarps) {
        const int64_t ph = bin / PW, pw = bin % PW;
        const A grad = ld(grad_out[(k * C + c) * PH * PW + bin]);
        for (int64_t iy = 0; iy < b.grid_h; iy++) {
            const AxisSample<A> y = y_sample(t, tables, b, s, ph, iy, SameSample<A>{});
            for (int64_t ix = 0; ix < b.grid_w; ix++) {
                const AxisSample<A> x = x_sample(t, tables, b, s, pw, ix, SameSample<A>{});
                if (!(y.inside && x.inside)) continue;
                atomicAdd(&image[(y.lo * W + x.lo) * C], grad * (y.h * x.h) / b.count);
                atomicAdd(&image[(y.lo * W + x.hi) * C], grad * (y.h * x.l) / b.count);
                atomicAdd(&image[(y.hi * W + x.lo) * C], grad * (y.l * x.h) / b.count);
                atomicAdd(&image[(y.hi * W + x.hi) * C], grad * (y.l * x.l) / b.count);
            }
        }
    }
}

// ----------------------------------------------------------------------------------------------
// Launchers: grids come from the sizes; every launch is checked by the caller through the returned error.

cudaError_t roi_align_forward_cuda(DType dtype, bool channels_last, void* out, const void* input, const void* boxes,
                                   const RoiAlignShape& s, cudaStream_t stream) {
    const int64_t per_box = s.channels * s.pooled_height * s.pooled_width;
    const int64_t by = cdiv(per_box, kThreads);
    // 32-bit offsets where j and its stride, and every offset into one image, fit an int
    const bool small = per_box + int64_t(kThreads) * kMaxGridY <= INT32_MAX &&
                       s.height * s.width * s.channels <= INT32_MAX;
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        auto* o = static_cast<T*>(out);
        auto *in = static_cast<const T*>(input), *bx = static_cast<const T*>(boxes);
        if (channels_last) {
            const dim3 grid(unsigned(s.boxes), unsigned(cdiv(s.channels, kLanes))), block(kLanes, kWarps);
            if (small) roi_align_forward_channels_last_kernel<T, int><<<grid, block, 0, stream>>>(o, in, bx, s);
            else roi_align_forward_channels_last_kernel<T, int64_t><<<grid, block, 0, stream>>>(o, in, bx, s);
        } else {
            const dim3 grid(unsigned(s.boxes), unsigned(by < kMaxGridY ? by : kMaxGridY));
            if (small) roi_align_forward_kernel<T, int><<<grid, kThreads, 0, stream>>>(o, in, bx, s);
            else roi_align_forward_kernel<T, int64_t><<<grid, kThreads, 0, stream>>>(o, in, bx, s);
        }
        return cudaGetLastError();
    });
}

cudaError_t roi_align_backward_cuda(DType dtype, int64_t version, void* grad_input, const void* grad_out,
                                    const void* boxes, const RoiAlignShape& s, cudaStream_t stream) {
    return dispatch_dtype(dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        using A = acc_t<T>;
        const T* g = static_cast<const T*>(grad_out);
        const T* bx = static_cast<const T*>(boxes);
        if (version == kRoiAlignBackwardChannelsLast) {
            const dim3 grid(unsigned(s.boxes), unsigned(cdiv(s.channels, kLanes)));
            roi_align_backward_channels_last_kernel<T>
                <<<grid, dim3(kLanes, kWarps), 0, stream>>>(static_cast<A*>(grad_input), g, bx, s);
        } else {
            const int64_t by = cdiv(s.channels * s.pooled_height * s.pooled_width, kThreads);
            const dim3 grid(unsigned(s.boxes), unsigned(by < kMaxGridY ? by : kMaxGridY));
            roi_align_backward_atomic_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<A*>(grad_input), g, bx, s);
        }
        return cudaGetLastError();
    });
}
