// binding.h: what every op's binding file shares: torch's light headers, argument checks, the CUDA
// device guard and stream, and the launch check.
//
// Only binding files include this (it is torch). They are compiled once per build; an edit to a kernel
// file recompiles that kernel alone. The headers are the light ones on purpose: <torch/extension.h>
// costs ~18 s per compile, these ~6 s.
#pragma once
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
            TORCH_CHECK_TYPE(false, op, ": ", arg, " must be a floating-point tensor (float32, float64, "
                             "float16 or bfloat16), but got ", t.scalar_type());
    }
}

// Same device, same dtype, same shape: each failure names both arguments and what they hold.
inline void check_same_device(const char* op, const char* x, const at::Tensor& tx, const char* y,
                              const at::Tensor& ty) {
    TORCH_CHECK(tx.device() == ty.device(), op, ": ", x, " and ", y, " must be on the same device, but ", x,
                " is on ", tx.device(), " and ", y, " is on ", ty.device());
}
inline void check_same_dtype(const char* op, const char* x, const at::Tensor& tx, const char* y,
                             const at::Tensor& ty) {
    TORCH_CHECK_TYPE(tx.scalar_type() == ty.scalar_type(), op, ": ", x, " and ", y,
                     " must have the same dtype, but ", x, " is ", tx.scalar_type(), " and ", y, " is ",
                     ty.scalar_type());
}
inline void check_same_shape(const char* op, const char* x, const at::Tensor& tx, const char* y,
                             const at::Tensor& ty) {
    TORCH_CHECK_VALUE(tx.sizes() == ty.sizes(), op, ": ", x, " and ", y, " must have the same shape, but ",
                      x, " has shape ", tx.sizes(), " and ", y, " has shape ", ty.sizes());
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
    TORCH_CHECK_VALUE(out.is_contiguous(), op, ": out must be contiguous (it is written through a raw pointer)"
                      "; pass out=None to get a new tensor");
    for (const auto& in : inputs) {
        TORCH_CHECK_VALUE(at::get_overlap_status(out, in) != at::MemOverlapStatus::Partial, op,
                          ": out partly overlaps an input, so the kernel would read values it already wrote");
    }
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
