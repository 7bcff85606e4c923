"""An experiment, run by hand on a GPU machine, behind the forward's design in kernels/roi_align/roi_align.cu: where
the time of torchvision's benchmark case goes (N = 2, C = 256, a 200 x 272 map, 1000 boxes, 7 x 7 bins, sampling
ratio 2), for each way of reading the input, side by side in one process, float32 and float16:

    ours nchw              forward 1 on an (N, C, H, W) input (what ops.roi_align runs for it)
    ours channels_last     forward 2 on a channels-last input, read where it lies
    ours nchw->cl          the input copied to channels-last first (torch's copy), then forward 2: the price of
                           taking forward 2's layout for an (N, C, H, W) input
    no tables              forward 1 computing every sample on the fly (the tables in shared memory off)
    512 threads            forward 1 with blocks of 512 threads (torchvision's) instead of 256
    torchvision            torchvision's forward on the (N, C, H, W) input

Each build is checked against torchvision on small awkward cases first.

    python scripts/experiment_roi_align_variants.py   (prints; writes roi_align-variants.json into $OUT where it is
                                                       set, else into results/<date>-<gpu>/)

With the argument `profile` it makes, for Nsight Compute, two calls of each float32 forward (ours on both layouts,
then torchvision's) and nothing else; results/*/ncu-roi_align-forward.txt is the second round's:

    ncu --clock-control none -k regex:roi_align --launch-skip 3 --launch-count 3 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
        --section InstructionStats python scripts/experiment_roi_align_variants.py profile
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_roi_align import BOXES, C, H, N, POOLED, SAMPLING, SCALE, W, detector_boxes  # noqa: E402
from kit import results, timing  # noqa: E402
from kit.notebook import scratch_variant  # noqa: E402

from loader import ops  # noqa: E402

VARIANTS = {
    "no tables": lambda src: src.replace("constexpr int kMaxTable = 128;", "constexpr int kMaxTable = 1;"),
    "512 threads": lambda src: src.replace("constexpr int kThreads = 256;", "constexpr int kThreads = 512;"),
}


def check(lab, dev):
    """Worst error against torchvision over small awkward cases, both layouts, float32."""
    import torchvision

    worst = 0.0
    g = torch.Generator().manual_seed(0)
    for n, c, h, w, k, pooled, sr, aligned in [
        (2, 3, 9, 11, 7, (3, 2), 2, False),
        (1, 40, 17, 5, 33, (7, 7), -1, True),
        (3, 70, 30, 31, 100, (2, 5), 0, False),
    ]:
        x = torch.randn(n, c, h, w, generator=g).to(dev)
        xy = torch.rand(k, 4, generator=g) * torch.tensor([w, h, w, h]) * 4 - 3
        idx = torch.randint(0, n, (k, 1), generator=g).float()
        rois = torch.cat([idx, torch.minimum(xy[:, :2], xy[:, 2:]), torch.maximum(xy[:, :2], xy[:, 2:])], 1).to(dev)
        ref = torchvision.ops.roi_align(x, rois, pooled, 0.9, sr, aligned)
        for inp in (x, x.contiguous(memory_format=torch.channels_last)):
            got = lab.roi_align(inp, rois, pooled, 0.9, sr, aligned)
            worst = max(worst, float((got - ref).abs().max()))
    return worst


def main():
    import torchvision  # noqa: F401

    dev = torch.device("cuda")
    labs, folders = {"ours": ops}, {"ours": (ROOT / "kernels", None)}
    for name, transform in VARIANTS.items():
        labs[name], kernels = scratch_variant("roi_align", transform)
        folders[name] = (kernels, kernels.parent / "build")
    # the builds in parallel, one process each (the calls below then find them built)
    builds = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, loader; loader.build('roi_align', True, sys.argv[1], "
                "None if sys.argv[2] == '-' else sys.argv[2])",
                str(k),
                str(b) if b else "-",
            ],
            cwd=ROOT,
        )
        for k, b in folders.values()
    ]
    if any(b.wait() for b in builds):
        raise SystemExit("a build failed")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "errors": {}, "times_us": {}}
    for name, lab in labs.items():
        res["errors"][name] = check(lab, dev)
        print(f"{name}: worst error against torchvision {res['errors'][name]:.2e}", flush=True)
    rois32 = detector_boxes(BOXES, N, H, W, SCALE, dev)
    tv = torch.ops.torchvision.roi_align.default
    ph, pw = POOLED
    args = (SCALE, ph, pw, SAMPLING, False)
    for dtype in (torch.float32, torch.float16):
        x = torch.randn(N, C, H, W, device=dev, dtype=dtype)
        xl = x.contiguous(memory_format=torch.channels_last)
        rois = rois32.to(dtype)
        fns = {
            "torchvision": lambda: tv(x, rois, *args),
            "ours nchw": lambda: ops.roi_align(x, rois, POOLED, SCALE, SAMPLING),
            "ours channels_last": lambda: ops.roi_align(xl, rois, POOLED, SCALE, SAMPLING),
            "ours nchw->cl": lambda: ops.roi_align(
                x.contiguous(memory_format=torch.channels_last), rois, POOLED, SCALE, SAMPLING
            ),
            "torch copy nchw->cl": lambda: x.contiguous(memory_format=torch.channels_last),
        }
        for name in VARIANTS:
            fns[name] = (lambda lab: lambda: lab.roi_align(x, rois, POOLED, SCALE, SAMPLING))(labs[name])
        times = timing.side_by_side(fns, device=dev, rounds=5, budget=2.0)
        row = res["times_us"][str(dtype).removeprefix("torch.")] = {k: t.median * 1e6 for k, t in times.items()}
        base = row["torchvision"]
        print(
            f"{dtype}: " + ", ".join(f"{k} {v:.1f} us ({base / v:.2f}x tv)" for k, v in row.items()),
            flush=True,
        )
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else results.machine_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "roi_align-variants.json").write_text(json.dumps(res, indent=1))


def profile():
    import torchvision  # noqa: F401

    dev = torch.device("cuda")
    rois = detector_boxes(BOXES, N, H, W, SCALE, dev)
    x = torch.randn(N, C, H, W, device=dev)
    xl = x.contiguous(memory_format=torch.channels_last)
    for _ in range(2):
        ops.roi_align(x, rois, POOLED, SCALE, SAMPLING)
        ops.roi_align(xl, rois, POOLED, SCALE, SAMPLING)
        torch.ops.torchvision.roi_align(x, rois, SCALE, *POOLED, SAMPLING, False)
    torch.cuda.synchronize()


if __name__ == "__main__":
    profile() if sys.argv[1:] == ["profile"] else main()
