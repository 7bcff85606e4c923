"""An experiment, run by hand on a GPU machine: version 6 of matmul.cu (what ops.matmul runs for float32) changed
one way at a time, each built from a scratch copy of kernels/matmul, checked against a float64 matmul and timed
beside torch.matmul (TF32 off) in one process; `make bench` holds ops.matmul to 0.60x torch.matmul at 4096^3.

    VARIANTS="base,bounds,prefetch8,prefetch16" python scripts/experiment_matmul_variants.py   (prints the ratios)

A variant is
- `base`: matmul.cu as it is (8 values of k per step, tiles loaded, then used);
- `bounds`: __launch_bounds__(256, 2) on the kernel: at most 128 registers, so that two blocks share an SM;
- `prefetch8`: the next step's tiles loaded into registers before this step's multiply-adds and stored to shared
  memory after them, so that the loads' latency (~1 us from DRAM) hides behind the step's 512 FMAs per thread
  instead of stalling them (8 more registers per thread);
- `prefetch16`: that, with 16 values of k per step: half the barriers per flop, 2 float4 of each tile per thread
  (16 more registers);
- `<variant>-bounds`: with __launch_bounds__ as well.
Compiled for sm_90a with nvcc 13.0 (cuobjdump, the <true> kernel): base 127 registers, bounds 123, prefetch8 127,
prefetch8-bounds 128, prefetch16 143 (so one block per SM), prefetch16-bounds 128 and 16 bytes of stack (spills).
Nothing here has run on a GPU yet.
Writes $OUT/matmul_variants.json where OUT is set (else prints only). Sizes: SIZES="2048,4096,8192"."""

import json
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kit import timing  # noqa: E402
from kit.notebook import scratch_variant  # noqa: E402

VARIANTS = os.environ.get("VARIANTS", "base,bounds,prefetch8,prefetch8-bounds,prefetch16,prefetch16-bounds").split(",")
SIZES = [int(s) for s in os.environ.get("SIZES", "2048,4096,8192").split(",")]
CHECK_SHAPES = [(1, 1, 1), (127, 129, 257), (129, 257, 1000), (1000, 1000, 1000), (33, 136, 40), (130, 132, 12)]

HEAD = "template <bool kVec>\n__global__ void matmul_vec_kernel("
PREFETCH = r"""template <bool kVec>
__global__ void BOUNDS matmul_vec_kernel(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    constexpr int kStep = STEP, kLoads = kStep * kBM / 4 / kR2Threads;  // float4s of each tile per thread
    static_assert(kLoads * kR2Threads * 4 == kStep * kBM && kBM == kBN, "the tiles split evenly over threads");
    __shared__ __align__(16) float As[kStep][kBM];
    __shared__ __align__(16) float Bs[kStep][kBN];
    const int t = threadIdx.x, trow = t / (kBN / kTN), tcol = t % (kBN / kTN);
    const int64_t row0 = int64_t(blockIdx.y) * kBM, col0 = int64_t(blockIdx.x) * kBN;
    float acc[kTM][kTN] = {};
    float4 av[kLoads], bv[kLoads];
    auto load = [&](int64_t k0) {
#pragma unroll
        for (int q = 0; q < kLoads; q++) {
            const int i = t + q * kR2Threads;
            const int ar = i / (kStep / 4), ak = (i % (kStep / 4)) * 4;
            const int bk = i / (kBN / 4), bc = (i % (kBN / 4)) * 4;
            av[q] = row0 + ar < M ? load4<kVec>(a + (row0 + ar) * K + k0 + ak, k0 + ak, K)
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            bv[q] = k0 + bk < K ? load4<kVec>(b + (k0 + bk) * N + col0 + bc, col0 + bc, N)
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    };
    auto store = [&]() {
#pragma unroll
        for (int q = 0; q < kLoads; q++) {
            const int i = t + q * kR2Threads;
            const int ar = i / (kStep / 4), ak = (i % (kStep / 4)) * 4;
            const int bk = i / (kBN / 4), bc = (i % (kBN / 4)) * 4;
            As[ak + 0][ar] = av[q].x;
            As[ak + 1][ar] = av[q].y;
            As[ak + 2][ar] = av[q].z;
            As[ak + 3][ar] = av[q].w;
            *reinterpret_cast<float4*>(&Bs[bk][bc]) = bv[q];
        }
    };
    load(0);
    store();
    __syncthreads();
    for (int64_t k0 = 0; k0 < K; k0 += kStep) {
        const bool more = k0 + kStep < K;
        if (more) load(k0 + kStep);  // in flight during this step's multiply-adds
        vec_multiply_tiles<kStep>(As, Bs, trow, tcol, acc);
        __syncthreads();  // every thread done reading this step's tiles
        if (more) {
            store();
            __syncthreads();  // the next step's tiles in place before anyone reads them
        }
    }
    vec_store_outputs<kVec>(c, acc, row0 + trow * kTM, col0 + tcol * kTN, M, N);
}

"""


def variant_source(src, name):
    """matmul.cu with version 6 changed as `name` says (the prefetching kernels use version 6's multiply-adds and
    store, vec_multiply_tiles and vec_store_outputs, as they stand in matmul.cu)."""
    if name == "base":
        return src
    bounds = "__launch_bounds__(256, 2)" if name.endswith("bounds") else ""
    if name.startswith("prefetch"):
        step = name.removeprefix("prefetch").removesuffix("-bounds")
        start = src.index(HEAD)
        end = src.index("// ------", start)  # the next section (version 7)
        return src[:start] + PREFETCH.replace("BOUNDS", bounds).replace("STEP", step) + src[end:]
    if name == "bounds":
        return src.replace(HEAD, f"template <bool kVec>\n__global__ void {bounds} matmul_vec_kernel(", 1)
    raise ValueError(f"unknown variant {name!r}")


def max_error_ratio(got, a, b):
    """The largest error against a float64 matmul, as a share of tests/test_matmul.py's bound ((2K + 8) eps |A||B|):
    at most 1 is right."""
    ref = a.double() @ b.double()
    bound = (2 * a.shape[1] + 8) * 2.0**-24 * (a.double().abs() @ b.double().abs()) + 1e-300
    return float(((got.double() - ref).abs() / bound).max())


def main():
    dev = torch.device("cuda")
    tf32, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, False
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": {}, "variants": {}}
    inputs = {n: (torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)) for n in SIZES}
    for n, (a, b) in inputs.items():
        res["torch"][n] = timing.benchmark(lambda: torch.matmul(a, b), dev, budget=0.3).median
    for name in VARIANTS:
        lab, _ = scratch_variant("matmul", lambda src: variant_source(src, name), changes=name != "base")
        t0 = time.time()
        lab.matmul(torch.ones(2, 2, device=dev), torch.ones(2, 2, device=dev))  # builds the variant
        print(f"variant {name} built in {time.time() - t0:.1f}s", flush=True)
        op = torch.ops.labkit.matmul.default
        errors = {}
        for m, n, k in CHECK_SHAPES:
            a, b = torch.randn(m, k, device=dev), torch.randn(k, n, device=dev)
            errors[f"{m}x{n}x{k}"] = max_error_ratio(op(a, b), a, b)
        # and an unaligned start: the kernel's scalar path
        base_a = torch.randn(300 * 130 + 1, device=dev)
        a, b = base_a[1:].view(300, 130), torch.randn(130, 260, device=dev)
        errors["unaligned 300x260x130"] = max_error_ratio(op(a, b), a, b)
        out = {"max_error_of_bound": max(errors.values()), "errors": errors, "vs_torch": {}}
        for n, (a, b) in inputs.items():
            t = timing.benchmark(lambda: op(a, b), dev, budget=0.3)
            out["vs_torch"][n] = res["torch"][n] / t.median
            out.setdefault("tflops", {})[n] = timing.tflops(2 * n**3, t.median)
        res["variants"][name] = out
        print(
            f"  {name:12s} worst error {out['max_error_of_bound']:.3f} of the bound; vs torch.matmul: "
            + ", ".join(f"{n}: {r:.3f} ({out['tflops'][n]:.1f} TFLOP/s)" for n, r in out["vs_torch"].items()),
            flush=True,
        )
    torch.backends.cuda.matmul.allow_tf32 = tf32
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "matmul_variants.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
