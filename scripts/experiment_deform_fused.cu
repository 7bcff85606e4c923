// An experiment behind a sentence of notebook 09 and kernels/deform_conv2d/deform_conv2d.cu: would deformable
// convolution's forward be faster fused, the samples going from the bilinear gather straight into the tensor
// cores through shared memory, never written to a column buffer in global memory? The kit's forward is im2col (the
// columns, 151 MB in float16 at a detector's shape) and then a matmul that reads them back. A fused kernel saves
// that round trip and overlaps the sampling with the multiply-adds; it pays for it with fewer threads gathering at
// once (the accumulators take registers) and with the weights read by every tile of pixels.
//
// The fused forward, float16 and bfloat16, weight groups 1, any offset groups (every channel's group read off the
// shape), any stride, padding, dilation and kernel size:
//   - a block computes out[b][0 .. C_out)[p .. p + N) for N = 64 or 128 output columns (b * L + p flattened, so a tile may
//     straddle two images) and up to kTileM = 256 output channels (grid y walks further ones);
//   - first, for its 64 columns and every tap and offset group, where the sample lies: four pixel indices and four
//     weights (mask times the bilinear weight, 0 for a pixel off the map; NaN for a NaN position) in shared memory,
//     so a sample of a channel is four loads and four multiply-adds;
//   - then along K = C_in * kk in slabs of kSlabK rows (row c * kk + k, the weight's own order): the slab of the
//     weights (kTileM x kSlabK) copied in, the slab of the columns (kSlabK x 64) sampled in, both into one of two
//     buffers, one barrier, and eight warps multiply (WMMA, 16 x 16 x 16, float accumulators): each warp 32
//     channels by N columns (N = 128 halves the weights' reads from L2 and keeps one block an SM, not two);
//   - last, the accumulators through shared memory, plus bias, rounded once to out.
// WMMA compiles to mma.sync (about 60% of wgmma's peak): the multiply-adds are 19 G at the detector's shape, ~0.1 ms
// at that rate, less than the ~0.28 ms the gather took as im2col on an H100, so the gather bounds this kernel either
// way. The results agree with torchvision's to float16 rounding, not bit for bit (the mask is folded into the
// weights of the four pixels); pixels off the map are read at index 0 with weight 0, so an infinite input there
// would give NaN where torchvision gives 0: an experiment's simplifications, checked on finite inputs.
//
// Built and timed by scripts/experiment_deform_fused.py (torch's cpp_extension; the binding is the one below).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <torch/extension.h>

#include "deform_conv2d.h"

namespace {

constexpr int kThreads = 256;  // eight warps
constexpr int kTileM = 256;  // output channels per block
constexpr int kSlabK = 32;  // rows of K per slab: two WMMA steps
constexpr int kPadA = 8;  // halves of padding per row of the smem tiles: rows 16 bytes apart off the banks
constexpr int kPadB = 8;

template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float(__half v) {
    return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __half from_float(float v) {
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float(float v) {
    return __float2bfloat16_rn(v);
}

struct Tap {  // one sample's four pixels (indices within a channel plane) and their weights, mask folded in
    int32_t index[4];
    float weight[4];
};

template <typename T, int kTileN>
__global__ void __launch_bounds__(kThreads, kTileN == 64 ? 2 : 1)
    deform_fused_forward(T* __restrict__ out, const T* __restrict__ input, const T* __restrict__ offset,
                         const T* __restrict__ mask, const T* __restrict__ weight, const T* __restrict__ bias,
                         DeformConv2dShape s) {
    using namespace nvcuda;
    extern __shared__ __align__(128) unsigned char smem[];
    const int64_t kk = s.kernel_h * s.kernel_w, L = s.out_height * s.out_width, n_cols = s.batch * L;
    const int64_t K = s.in_channels * kk, per_group = s.in_channels / s.offset_groups;
    const int64_t col0 = int64_t(blockIdx.x) * kTileN, m0 = int64_t(blockIdx.y) * kTileM;
    const int64_t G = s.offset_groups;

    // shared memory: the taps' table (kTileN x kk x G), then two buffers of (A slab, B slab); the epilogue's float
    // staging reuses the buffers
    Tap* taps = reinterpret_cast<Tap*>(smem);
    const int64_t table_bytes = ((kTileN * kk * G * int64_t(sizeof(Tap))) + 127) / 128 * 128;
    T* bufs = reinterpret_cast<T*>(smem + table_bytes);
    constexpr int a_elems = kTileM * (kSlabK + kPadA), b_elems = kSlabK * (kTileN + kPadB);
    T* a_buf[2] = {bufs, bufs + a_elems + b_elems};
    T* b_buf[2] = {bufs + a_elems, bufs + 2 * a_elems + b_elems};

    // the table: entry (g, k, n) for column col0 + n
    for (int64_t e = threadIdx.x; e < kTileN * kk * G; e += kThreads) {
        const int64_t n = e % kTileN, k = e / kTileN % kk, g = e / kTileN / kk;
        const int64_t col = col0 + n;
        Tap tap{{0, 0, 0, 0}, {0.f, 0.f, 0.f, 0.f}};
        if (col < n_cols) {
            const int64_t b = col / L, p = col % L, oy = p / s.out_width, ox = p % s.out_width;
            const int64_t plane = (b * G + g) * kk + k;
            const float y = sample_position(oy, k / s.kernel_w, s.stride_h, s.pad_h, s.dilation_h,
                                            to_float(offset[2 * plane * L + p]));
            const float x = sample_position(ox, k % s.kernel_w, s.stride_w, s.pad_w, s.dilation_w,
                                            to_float(offset[(2 * plane + 1) * L + p]));
            const float m = s.has_mask ? to_float(mask[plane * L + p]) : 1.f;
            const DeformSample<float> at = deform_sample(y, x, s.height, s.width);
            if (at.nan) {
                for (int i = 0; i < 4; i++) tap.weight[i] = NAN;
            } else if (at.inside) {
                const float hy = 1.f - at.ly, hx = 1.f - at.lx;
                const float w[4] = {hy * hx, hy * at.lx, at.ly * hx, at.ly * at.lx};
                const bool on[4] = {at.top && at.left, at.top && at.right, at.bottom && at.left, at.bottom && at.right};
                const int64_t idx[4] = {at.y0 * s.width + at.x0, at.y0 * s.width + at.x0 + 1,
                                        (at.y0 + 1) * s.width + at.x0, (at.y0 + 1) * s.width + at.x0 + 1};
                for (int i = 0; i < 4; i++) {
                    tap.index[i] = on[i] ? int32_t(idx[i]) : 0;
                    tap.weight[i] = on[i] ? m * w[i] : 0.f;
                }
            }
        }
        taps[e] = tap;
    }

    // this thread's column of the B slab, and its rows: kSlabK * kTileN / kThreads samples a slab
    const int n_mine = threadIdx.x % kTileN,
              r_first = threadIdx.x / kTileN;  // rows r_first, r_first + kThreads / kTileN, ...
    const int64_t my_col = col0 + n_mine;
    const int64_t my_b = my_col < n_cols ? my_col / L : 0;
    const int64_t plane_size = s.height * s.width;
    const T* my_image = input + my_b * s.in_channels * plane_size;

    auto fill = [&](int buf, int64_t k0) {
        // A: weight rows m0 .. m0 + kTileM, columns k0 .. k0 + kSlabK (0 past either end)
        T* a = a_buf[buf];
        if (K % 8 == 0 && m0 + kTileM <= s.out_channels && k0 + kSlabK <= K) {  // 16-byte pieces, 4 a thread
            for (int e = threadIdx.x; e < kTileM * kSlabK / 8; e += kThreads) {
                const int r = e / (kSlabK / 8), c = e % (kSlabK / 8) * 8;
                *reinterpret_cast<uint4*>(&a[r * (kSlabK + kPadA) + c]) =
                    __ldg(reinterpret_cast<const uint4*>(&weight[(m0 + r) * K + k0 + c]));
            }
        } else
            for (int e = threadIdx.x; e < kTileM * kSlabK; e += kThreads) {
                const int r = e / kSlabK, c = e % kSlabK;
                const int64_t row = m0 + r, kc = k0 + c;
                a[r * (kSlabK + kPadA) + c] = row < s.out_channels && kc < K ? weight[row * K + kc]
                                                                             : from_float<T>(0.f);
            }
        // B: samples for rows k0 .. k0 + kSlabK
        T* bb = b_buf[buf];
        for (int r = r_first; r < kSlabK; r += kThreads / kTileN) {
            const int64_t kc = k0 + r;
            float v = 0.f;
            if (kc < K && my_col < n_cols) {
                const int64_t c = kc / kk, k = kc % kk, g = c / per_group;
                const Tap& tap = taps[(g * kk + k) * kTileN + n_mine];
                const T* plane = my_image + c * plane_size;
                v = tap.weight[0] * to_float(plane[tap.index[0]]) + tap.weight[1] * to_float(plane[tap.index[1]]) +
                    tap.weight[2] * to_float(plane[tap.index[2]]) + tap.weight[3] * to_float(plane[tap.index[3]]);
            }
            bb[r * (kTileN + kPadB) + n_mine] = from_float<T>(v);
        }
    };

    const int warp = threadIdx.x / 32;
    constexpr int kFragsN = kTileN / 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][kFragsN];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < kFragsN; j++) wmma::fill_fragment(acc[i][j], 0.f);

    __syncthreads();  // the table
    const int64_t slabs = (K + kSlabK - 1) / kSlabK;
    fill(0, 0);
    for (int64_t sl = 0; sl < slabs; sl++) {
        __syncthreads();  // slab sl is in; the buffer of slab sl - 1 is free
        if (sl + 1 < slabs) fill(int((sl + 1) & 1), (sl + 1) * kSlabK);
        const T* a = a_buf[sl & 1];
        const T* bb = b_buf[sl & 1];
        for (int kq = 0; kq < kSlabK; kq += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
            for (int i = 0; i < 2; i++)
                wmma::load_matrix_sync(fa[i], a + (warp * 32 + i * 16) * (kSlabK + kPadA) + kq, kSlabK + kPadA);
            for (int j = 0; j < kFragsN; j++) {
                wmma::load_matrix_sync(fb, bb + kq * (kTileN + kPadB) + j * 16, kTileN + kPadB);
                for (int i = 0; i < 2; i++) wmma::mma_sync(acc[i][j], fa[i], fb, acc[i][j]);
            }
        }
    }
    __syncthreads();  // every warp is done with the buffers: they become the float staging

    // the epilogue: each warp's 32 x 64 floats into its own part of the staging, then out with bias, rounded once
    float* stage = reinterpret_cast<float*>(bufs) + warp * 32 * kTileN;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < kFragsN; j++)
            wmma::store_matrix_sync(stage + i * 16 * kTileN + j * 16, acc[i][j], kTileN, wmma::mem_row_major);
    __syncwarp();
    for (int e = threadIdx.x % 32; e < 32 * kTileN; e += 32) {
        const int r = e / kTileN, n = e % kTileN;
        const int64_t row = m0 + warp * 32 + r, col = col0 + n;
        if (row >= s.out_channels || col >= n_cols) continue;
        const int64_t b = col / L, p = col % L;
        // torchvision's order: the matmul's result rounded, then the bias added
        float v = to_float(from_float<T>(stage[e]));
        if (bias) v += to_float(bias[row]);
        out[(b * s.out_channels + row) * L + p] = from_float<T>(v);
    }
}

}  // namespace

// The binding: the shape as deform_conv2d.cpp reads it (weight groups 1 only), the launch on the current stream.
torch::Tensor fused_forward(torch::Tensor input, torch::Tensor weight, torch::Tensor offset, torch::Tensor mask,
                            torch::Tensor bias, int64_t stride, int64_t pad, int64_t dilation, int64_t tile_n) {
    TORCH_CHECK(tile_n == 64 || tile_n == 128, "fused_forward: tile_n 64 or 128");
    TORCH_CHECK(input.is_cuda() && input.scalar_type() != at::kFloat && input.scalar_type() != at::kDouble,
                "fused_forward: 16-bit CUDA tensors only");
    input = input.contiguous(), weight = weight.contiguous(), offset = offset.contiguous(), mask = mask.contiguous();
    DeformConv2dShape s{};
    s.batch = input.size(0), s.in_channels = input.size(1), s.height = input.size(2), s.width = input.size(3);
    s.out_channels = weight.size(0), s.kernel_h = weight.size(2), s.kernel_w = weight.size(3);
    TORCH_CHECK(weight.size(1) == s.in_channels, "fused_forward: weight groups 1 only");
    s.stride_h = s.stride_w = stride, s.pad_h = s.pad_w = pad, s.dilation_h = s.dilation_w = dilation;
    s.out_height = (s.height + 2 * pad - dilation * (s.kernel_h - 1) - 1) / stride + 1;
    s.out_width = (s.width + 2 * pad - dilation * (s.kernel_w - 1) - 1) / stride + 1;
    s.weight_groups = 1;
    s.offset_groups = offset.size(1) / (2 * s.kernel_h * s.kernel_w);
    s.has_mask = mask.numel() > 0;
    const c10::cuda::CUDAGuard guard(input.device());
    auto out = torch::empty({s.batch, s.out_channels, s.out_height, s.out_width}, input.options());
    const int64_t kk = s.kernel_h * s.kernel_w, n_cols = s.batch * s.out_height * s.out_width;
    if (out.numel() == 0) return out;
    const int64_t table = (tile_n * kk * s.offset_groups * int64_t(sizeof(Tap)) + 127) / 128 * 128;
    const int64_t bufs = 2 * (kTileM * (kSlabK + kPadA) + kSlabK * (tile_n + kPadB)) * 2;
    const int64_t smem = table + std::max<int64_t>(bufs, 8 * 32 * tile_n * 4);
    int device_smem = 0;  // the opt-in limit: 227 KB on Hopper; the taps' table grows with the offset groups
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&device_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, input.get_device()));
    TORCH_CHECK(smem <= device_smem, "fused_forward: ", tile_n, " columns a block with ", s.offset_groups,
                " offset groups need ", smem, " bytes of shared memory, more than this GPU's ", device_smem);
    const dim3 grid(unsigned((n_cols + tile_n - 1) / tile_n), unsigned((s.out_channels + kTileM - 1) / kTileM));
    auto launch = [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        auto kernel = tile_n == 64 ? deform_fused_forward<T, 64> : deform_fused_forward<T, 128>;
        C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        kernel<<<grid, kThreads, smem, at::cuda::getCurrentCUDAStream()>>>(
            reinterpret_cast<T*>(out.data_ptr()), reinterpret_cast<const T*>(input.data_ptr()),
            reinterpret_cast<const T*>(offset.data_ptr()),
            s.has_mask ? reinterpret_cast<const T*>(mask.data_ptr()) : nullptr,
            reinterpret_cast<const T*>(weight.data_ptr()),
            bias.numel() ? reinterpret_cast<const T*>(bias.data_ptr()) : nullptr, s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if (input.scalar_type() == at::kHalf) launch(static_cast<__half*>(nullptr));
    else launch(static_cast<__nv_bfloat16*>(nullptr));
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused_forward", &fused_forward); }
