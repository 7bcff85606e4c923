"""Would deformable convolution's forward be faster fused? scripts/experiment_deform_fused.cu's kernel (the samples
straight into the tensor cores through shared memory, no column buffer) beside ops.deform_conv2d's forward (im2col,
then the kit's matmul) and torchvision's, at the detector's shape of bench/bench_deform_conv.py (N 8, C 256,
64 x 64, 3 x 3, padding 1, mask, bias), float16 and bfloat16, offset groups 1 and 4, with 64 and 128 columns a block.

Each fused variant is first checked against a float64 product of torchvision's op (relative error in the Frobenius
norm, printed beside ours); then the three forwards are timed side by side in one process, each the median of
triton's do_bench. Prints one line per case and writes $OUT/deform-fused.json (default: results/<date>-<gpu>/).

    python scripts/experiment_deform_fused.py        # on a GPU machine, from the kit's folder
"""

import datetime
import json
import os
import sys
from pathlib import Path

import torch
import torchvision
import triton.testing
from torch.utils import cpp_extension

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kit import results  # noqa: E402
from loader import ops  # noqa: E402

N, C, H, W = 8, 256, 64, 64


def build():
    return cpp_extension.load(
        name="labkit_deform_fused_experiment",
        sources=[str(ROOT / "scripts" / "experiment_deform_fused.cu")],
        extra_include_paths=[str(ROOT / "kernels" / "common"), str(ROOT / "kernels" / "deform_conv2d")],
        extra_cuda_cflags=["-O3"],
        verbose=False,
    )


def inputs(dtype, groups):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(N, C, H, W, device="cuda", generator=g)
    offset = 2 * torch.randn(N, 2 * groups * 9, H, W, device="cuda", generator=g)
    mask = torch.rand(N, groups * 9, H, W, device="cuda", generator=g)
    weight = 0.05 * torch.randn(C, C, 3, 3, device="cuda", generator=g)
    bias = torch.randn(C, device="cuda", generator=g)
    return [t.to(dtype) for t in (x, offset, mask, weight, bias)]


def relative_error(got, want):
    return float((got.double() - want).norm() / want.norm())


def main():
    fused = build()
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for groups in (1, 4):
            x, offset, mask, weight, bias = inputs(dtype, groups)
            want = torchvision.ops.deform_conv2d(
                x.double(), offset.double(), weight.double(), bias.double(), padding=1, mask=mask.double()
            )
            calls = {
                "torchvision": lambda: torchvision.ops.deform_conv2d(x, offset, weight, bias, padding=1, mask=mask),
                "ours (im2col, matmul)": lambda: ops.deform_conv2d(x, offset, weight, bias, padding=(1, 1), mask=mask),
            }
            for tile in (64, 128):
                calls[f"fused, {tile} columns a block"] = lambda tile=tile: fused.fused_forward(
                    x, weight, offset, mask, bias, 1, 1, 1, tile
                )
            row = {"dtype": str(dtype).replace("torch.", ""), "offset_groups": groups, "error": {}, "us": {}}
            for name, call in list(calls.items()):
                try:
                    row["error"][name] = relative_error(call(), want)
                except RuntimeError as e:  # the binding's shared-memory check, raised before any launch
                    row.setdefault("does not fit", {})[name] = str(e).splitlines()[0]
                    del calls[name]
            for name, call in calls.items():
                row["us"][name] = triton.testing.do_bench(call, warmup=50, rep=300) * 1e3
            base = row["us"]["ours (im2col, matmul)"]
            row["speed against ours"] = {name: base / us for name, us in row["us"].items()}
            print(json.dumps(row), flush=True)
            rows.append(row)
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else results.machine_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "shape": {"N": N, "C": C, "H": H, "W": W, "kernel": [3, 3], "padding": 1, "mask": True, "bias": True},
        "source": "scripts/experiment_deform_fused.py (kernel: scripts/experiment_deform_fused.cu), triton do_bench "
        "medians side by side in one process; error: relative (Frobenius) against torchvision's op in float64",
        "cases": rows,
    }
    (out_dir / "deform-fused.json").write_text(json.dumps(record, indent=1) + "\n")
    print("wrote", out_dir / "deform-fused.json")


if __name__ == "__main__":
    main()
