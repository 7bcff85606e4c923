// cuda_half_types.cuh: cuda_types.cuh with CUDA's own 16-bit types, __half and __nv_bfloat16, for a kernel file that
// needs them: an instruction that takes them (WMMA fragments, wgmma) or their paired intrinsics (__floats2half2_rn).
// ld() and st() as for the kit's Float16 and BFloat16, through CUDA's conversions. Every other kernel file includes
// cuda_types.cuh alone, and does not pay for these two headers at each edit (cuda_types.cuh says why).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_types.cuh"

__device__ __forceinline__ float ld(__half x) { return __half2float(x); }
__device__ __forceinline__ float ld(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
