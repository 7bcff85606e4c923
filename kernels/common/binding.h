// binding.h: what every op's binding file shares: torch's light headers, argument checks, the CUDA
// device guard and stream, and the launch check.
//
// Only binding files include this (it is torch). They are compiled once per build; an edit to a kernel
// file recompiles that kernel alone. The headers are the light ones on purpose: <torch/extension.h>
// costs ~18 s per compile, these ~6 s. A binding includes it first: as a file's first include, it and
// autograd.h come precompiled (building/precompiled_header.py), and torch's headers are not parsed again.
#ifndef LABKIT_BINDING_H  // an include guard, not #pragma once: see building/precompiled_header.py
#define LABKIT_BINDING_H
#include <limits>
#include <utility>

#include <ATen/core/Tensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "kit.h"

#ifdef LABKIT_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

// The kernels' DType for a tensor's dtype; anything else is refused with the argument's name.
inline DType kit_dtype(const char* op, const char* arg, const at::Tensor& t) {
    switch (t.scalar_type()) {
        case at::kFloat: return DType::f32;
        case at::kDouble: return DType::f64;
        case at::kHalf: return DType::f16;
        case at::kBFloat16: return DType::bf16;
        default:
            TORCH_CHECK_TYPE(false, op, ": ", arg,
                             " must be a floating-point tensor (float32, float64, "
                             "float16 or bfloat16), but got ",
                             t.scalar_type());
    }
}

// Same device, same dtype, same shape: each failure names both arguments and what they hold.
inline void check_same_device(const char* op, const char* x, const at::Tensor& tx, const char* y,
                              const at::Tensor& ty) {
    TORCH_CHECK(tx.device() == ty.device(), op, ": ", x, " and ", y, " must be on the same device, but ", x, " is on ",
                tx.device(), " and ", y, " is on ", ty.device());
}
inline void check_same_dtype(const char* op, const char* x, const at::Tensor& tx, const char* y, const at::Tensor& ty) {
    TORCH_CHECK_TYPE(tx.scalar_type() == ty.scalar_type(), op, ": ", x, " and ", y, " must have the same dtype, but ",
                     x, " is ", tx.scalar_type(), " and ", y, " is ", ty.scalar_type());
}
inline void check_same_shape(const char* op, const char* x, const at::Tensor& tx, const char* y, const at::Tensor& ty) {
    TORCH_CHECK_VALUE(tx.sizes() == ty.sizes(), op, ": ", x, " and ", y, " must have the same shape, but ", x,
                      " has shape ", tx.sizes(), " and ", y, " has shape ", ty.sizes());
}

// An `out=` tensor is written through its raw pointer, so it must be exactly what the op would
// allocate: same device, dtype and shape as `like`, contiguous, and not partly overlapping an input
// (out == input is fine for an elementwise op; out = input shifted by one element is not).
inline void check_out(const char* op, const at::Tensor& out, const at::Tensor& like,
                      std::initializer_list<at::Tensor> inputs) {
    check_same_device(op, "out", out, "the inputs", like);
    check_same_dtype(op, "out", out, "the inputs", like);
    TORCH_CHECK_VALUE(out.sizes() == like.sizes(), op, ": out must have the inputs' shape ", like.sizes(),
                      ", but has shape ", out.sizes());
    TORCH_CHECK_VALUE(out.is_contiguous(), op,
                      ": out must be contiguous (it is written through a raw pointer)"
                      "; pass out=None to get a new tensor");
    for (const auto& in : inputs) {
        TORCH_CHECK_VALUE(at::get_overlap_status(out, in) != at::MemOverlapStatus::Partial, op,
                          ": out partly overlaps an input, so the kernel would read values it already wrote");
    }
}

// a (M x K) and b (K x N) for a matmul: 2-D, and a's columns matching b's rows; both shapes in the message.
inline void check_matmul_shapes(const char* op, const at::Tensor& a, const at::Tensor& b) {
    TORCH_CHECK_VALUE(a.dim() == 2 && b.dim() == 2, op, ": a and b must be 2-D matrices, but a has shape ", a.sizes(),
                      " and b has shape ", b.sizes(), ". For a batch, loop over it or use torch.matmul");
    TORCH_CHECK_VALUE(a.size(1) == b.size(0), op,
                      ": a's columns must match b's rows (a is M x K, b is K x N), "
                      "but a has shape ",
                      a.sizes(), " and b has shape ", b.sizes());
}

// A float32 matmul written into `out` (the matmul exercises): float32 matrices on one device, out of shape
// [M, N], contiguous and apart from a and b, and a grid of tile_m x tile_n tiles of C that CUDA can launch
// (blockIdx.y over row tiles: at most 65535 of them).
inline void check_matmul_into(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                              int64_t tile_m, int64_t tile_n) {
    check_same_device(op, "a", a, "b", b);
    check_same_device(op, "out", out, "a", a);
    for (const auto& [name, t] : {std::pair<const char*, const at::Tensor&>{"a", a}, {"b", b}, {"out", out}})
        TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat, op, ": ", name, " must be float32, but got ", t.scalar_type());
    check_matmul_shapes(op, a, b);
    TORCH_CHECK_VALUE(out.dim() == 2 && out.size(0) == a.size(0) && out.size(1) == b.size(1), op,
                      ": out must have shape [M, N] = [", a.size(0), ", ", b.size(1), "], but has shape ", out.sizes());
    TORCH_CHECK_VALUE(out.is_contiguous(), op, ": out must be contiguous (it is written through a raw pointer)");
    for (const auto& [name, in] : {std::pair<const char*, const at::Tensor&>{"a", a}, {"b", b}}) {
        const at::MemOverlapStatus s = at::get_overlap_status(out, in);
        TORCH_CHECK_VALUE(s != at::MemOverlapStatus::Partial && s != at::MemOverlapStatus::Full, op, ": out overlaps ",
                          name, ", which the kernel still reads");
    }
    TORCH_CHECK_VALUE(cdiv(a.size(0), tile_m) <= 65535, op, ": a has too many rows for one grid (", a.size(0),
                      "; at most ", 65535 * tile_m, ")");
    TORCH_CHECK_VALUE(cdiv(b.size(1), tile_n) <= std::numeric_limits<int32_t>::max(), op,
                      ": b has too many columns for one grid (", b.size(1), ")");
}

#ifdef LABKIT_WITH_CUDA
// The stream to launch on: the current stream of the device the guard made current. Launching on
// the default stream instead races with work PyTorch queued on its own streams (CUDA graphs, DDP).
inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

// Torch-free launchers return cudaGetLastError(); this turns a failed launch into a Python error.
inline void check_launch(const char* kernel, cudaError_t err) {
    TORCH_CHECK(err == cudaSuccess, kernel, " failed to launch: ", cudaGetErrorString(err));
}
#endif

#endif  // LABKIT_BINDING_H
