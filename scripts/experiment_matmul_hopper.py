"""The Hopper matmul versions (matmul_hopper.cu: 8 wgmma, 9 warpspec, 10 wide, 11 persistent, 12 tall) on one GPU, in one
process: each checked against torch.matmul of float64 copies on awkward shapes, then timed beside torch.matmul
(cuBLAS) side by side (kit.timing.side_by_side: CUDA events, L2 flushed, rounds taken in turn) at the shapes the
bars name, and one call as a competition harness times it (events around one call on an idle GPU).

    python scripts/experiment_matmul_hopper.py [--quick]     # prints a table; JSON into $OUT or results/<gpu>/

Needs a Hopper GPU and the op built for sm_90a (TORCH_CUDA_ARCH_LIST=9.0a, or unset on that machine)."""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kit import results, timing  # noqa: E402
from loader import ops  # noqa: E402

HOPPER = ["wgmma", "warpspec", "wide", "persistent", "tall"]
CHECK_SHAPES = [
    (1, 8, 8),
    (7, 64, 16),
    (129, 136, 72),
    (127, 264, 1000),
    (257, 520, 64),
    (1000, 1000, 1000),
    (300, 8, 4096),
    (2049, 2056, 72),
    (4096, 4096, 4096),
    (33, 257, 130),
    (4095, 4097, 4093),
]
TIME_SHAPES = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 5120, 4096),
    (512, 8192, 512),
    (1024, 1024, 1024),
    (16384, 1024, 1024),
    (4096, 4104, 4096),
    (4095, 4097, 4093),
]


def max_rel_error(got, a, b):
    ref = a.double() @ b.double()
    scale = (a.double().abs() @ b.double().abs()).clamp(min=1e-30)
    return float(((got.double() - ref).abs() / scale).max())


def one_call(fn, reps=20):
    """A competition harness's timing: the GPU idle, then events around one call; the median over reps."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        time.sleep(0.002)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    torch.manual_seed(0)
    out = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "checks": [], "times": []}
    a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    print(
        "fast runs",
        ops.matmul(a, a, which=True),
        "at 256^3 and",
        ops.matmul(
            torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16),
            torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16),
            which=True,
        ),
        "at 4096^3",
        flush=True,
    )
    for dtype in (torch.bfloat16, torch.float16):
        for m, n, k in CHECK_SHAPES:
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(k, n, device="cuda").to(dtype)
            for v in HOPPER + ["wmma"]:
                err = max_rel_error(ops.matmul(a, b, version=v), a, b)
                out["checks"].append({"dtype": str(dtype), "mnk": [m, n, k], "version": v, "max_rel_err": err})
                ok = err < 2e-2
                print(
                    f"check {str(dtype):15} {m:5} {n:5} {k:5} {v:10} rel err {err:.2e} {'ok' if ok else 'WRONG'}",
                    flush=True,
                )
    shapes = TIME_SHAPES[:3] if args.quick else TIME_SHAPES
    for dtype in (torch.bfloat16, torch.float16):
        for m, n, k in shapes:
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(k, n, device="cuda").to(dtype)
            fns = {"torch": lambda: torch.matmul(a, b), "fast": lambda: ops.matmul(a, b)}
            fns.update({v: (lambda v=v: ops.matmul(a, b, version=v)) for v in HOPPER + ["wmma"]})
            res = timing.side_by_side(fns, budget=0.5)
            flops = 2 * m * n * k
            row = {
                "dtype": str(dtype),
                "mnk": [m, n, k],
                "chosen": ops.matmul(a, b, which=True),
                **{name: {"median_s": t.median, "tflops": flops / t.median / 1e12} for name, t in res.items()},
            }
            row["one_call_ratio"] = one_call(lambda: torch.matmul(a, b)) / one_call(lambda: ops.matmul(a, b))
            out["times"].append(row)
            ref = res["torch"].median
            print(
                f"time {str(dtype):15} {m:5}x{n:5}x{k:5} torch {flops / ref / 1e12:6.1f} TF/s | "
                + " ".join(f"{name} {ref / t.median:.3f}x" for name, t in res.items() if name != "torch")
                + f" | one call {row['one_call_ratio']:.3f}x ({row['chosen']})",
                flush=True,
            )
            a = b = None
    dest = Path(os.environ.get("OUT") or results.machine_dir())
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "matmul_hopper.json").write_text(json.dumps(out, indent=1))
    print("wrote", dest / "matmul_hopper.json")


if __name__ == "__main__":
    main()
