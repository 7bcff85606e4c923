"""An experiment, run by hand on a GPU machine: ELU's vector kernels (forward and backward) changed one way at a time,
each built from a scratch copy of kernels/elu and timed beside F.elu, PyTorch's elu_backward and a copy in one process.

    VARIANTS="base,fwd-2x256,bwd-1x256,streaming" python scripts/experiment_elu_variants.py   (prints the ratios)

A variant is `fwd-PxT` / `bwd-PxT` (packs per thread x threads per block), `streaming` (loads and stores with the
evict-first hints __ldcs / __stcs), or `base` (elu.cu as it is). Writes $OUT/elu_variants.json where OUT is set.
Its runs on an H200, which chose elu.cu's block sizes and packs per thread: results/*/elu-variants*.json."""

import json
import os
import re
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kit import timing  # noqa: E402
from kit.notebook import scratch_variant  # noqa: E402

VARIANTS = os.environ.get("VARIANTS", "base,fwd-2x256,fwd-4x128,bwd-1x256,bwd-2x128,bwd-4x128,streaming").split(",")
SIZES = [1 << int(s) for s in os.environ.get("SIZES", "24,26,28").split(",")]
DTYPES = [getattr(torch, d) for d in os.environ.get("DTYPES", "float32,bfloat16,float16").split(",")]

STREAMING_HELPERS = """
template <typename P> __device__ __forceinline__ P ldcs_pack(const P* p) {
    const int4 v = __ldcs(reinterpret_cast<const int4*>(p)); P r; memcpy(&r, &v, 16); return r; }
template <typename P> __device__ __forceinline__ void stcs_pack(P* p, const P& x) {
    int4 v; memcpy(&v, &x, 16); __stcs(reinterpret_cast<int4*>(p), v); }
"""


def variant_source(src, name):
    if name == "base":
        return src
    if name == "streaming":
        src = src.replace('#include "elu.h"\n', '#include "elu.h"\n' + STREAMING_HELPERS, 1)
        src = re.sub(
            r"reinterpret_cast<const Pack16<T>\*>\((\w+)\)\[p\]",
            r"ldcs_pack(reinterpret_cast<const Pack16<T>*>(\1) + p)",
            src,
        )
        return re.sub(
            r"reinterpret_cast<Pack16<T>\*>\((\w+)\)\[p\] = (\w+);",
            r"stcs_pack(reinterpret_cast<Pack16<T>*>(\1) + p, \2);",
            src,
        )
    which, shape = name.split("-")
    packs, threads = shape.split("x")
    if which == "fwd":
        src = src.replace("constexpr int kPacks = 2;", f"constexpr int kPacks = {packs};")
        return src.replace("constexpr int kForwardThreads = 128;", f"constexpr int kForwardThreads = {threads};")
    src = src.replace("constexpr int kBackwardPacks = 2;", f"constexpr int kBackwardPacks = {packs};")
    return src.replace("constexpr int kBackwardThreads = 256;", f"constexpr int kBackwardThreads = {threads};")


def main():
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(), "ref": {}, "variants": {}}
    cases = []
    for dt in DTYPES:
        for n in SIZES:
            x = torch.randn(n, device=dev, dtype=dt)
            dy = torch.randn_like(x)
            key = f"{str(dt).replace('torch.', '')}-2^{n.bit_length() - 1}"
            nb_f, nb_b = 2 * n * x.element_size(), 3 * n * x.element_size()
            res["ref"][key] = {
                "torch_fwd": timing.benchmark(lambda: F.elu(x), dev, budget=0.15).gbps(nb_f),
                "torch_bwd": timing.benchmark(
                    lambda: torch.ops.aten.elu_backward(dy, 1.0, 1, 1, False, x), dev, budget=0.15
                ).gbps(nb_b),
                "copy_fwd": timing.time_copy(nb_f, dev, budget=0.15).gbps(nb_f),
                "copy_bwd": timing.time_copy(nb_b, dev, budget=0.15).gbps(nb_b),
            }
            cases.append((key, dt, n))
            x = dy = None
    for name in VARIANTS:
        lab, _ = scratch_variant("elu", lambda src: variant_source(src, name), changes=name != "base")
        t0 = time.time()
        lab.elu(torch.ones(4, device=dev))  # builds the variant
        print(f"variant {name} built in {time.time() - t0:.1f}s", flush=True)
        fwd, bwd = torch.ops.labkit.elu.default, torch.ops.labkit.elu_backward.default
        out = {}
        for key, dt, n in cases:
            x = torch.randn(n, device=dev, dtype=dt)
            dy = torch.randn_like(x)
            torch.testing.assert_close(fwd(x[:4099], 1.0), F.elu(x[:4099]))
            torch.testing.assert_close(
                bwd(dy[:4099], x[:4099], 1.0), torch.ops.aten.elu_backward(dy[:4099], 1.0, 1, 1, False, x[:4099])
            )
            ref = res["ref"][key]
            g_f = timing.benchmark(lambda: fwd(x, 1.0), dev, budget=0.15).gbps(2 * n * x.element_size())
            g_b = timing.benchmark(lambda: bwd(dy, x, 1.0), dev, budget=0.15).gbps(3 * n * x.element_size())
            out[key] = {
                "fwd_vs_torch": g_f / ref["torch_fwd"],
                "fwd_of_copy": g_f / ref["copy_fwd"],
                "bwd_vs_torch": g_b / ref["torch_bwd"],
                "bwd_of_copy": g_b / ref["copy_bwd"],
            }
            x = dy = None
        res["variants"][name] = out
        print(
            f"  {name:10s} of copy fwd/bwd: "
            + "  ".join(f"{k}: {v['fwd_of_copy']:.3f}/{v['bwd_of_copy']:.3f}" for k, v in out.items()),
            flush=True,
        )
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "elu_variants.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
