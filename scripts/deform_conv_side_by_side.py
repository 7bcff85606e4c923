"""ops.deform_conv2d beside torchvision.ops.deform_conv2d on one GPU, at a detector's shape (N 8, C_in = C_out = 256,
64 x 64, 3 x 3, padding 1, mask and bias; offsets randn * 2 pixels, mask uniform), in float32 and float16 with offset
groups 1 and 4: the forward and the forward+backward (torch.autograd.grad of all five inputs), each the median of
triton's do_bench, side by side in one process; the relative error of ours against torchvision's op in float64; and
for offset groups 1, torch.profiler's kernel times of one forward+backward of each, which say where the time goes.

Prints one line per case and writes results/<date>-<gpu>/deform_conv-side-by-side.json (notebook 09 shows it on
machines without a GPU). `make bench` (bench/bench_deform_conv.py) holds the bars; this script is the breakdown.
"""

import datetime
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kit import results  # noqa: E402
from loader import ops  # noqa: E402

N, C, H, W = 8, 256, 64, 64


def inputs(dtype, groups):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(N, C, H, W, device="cuda", generator=g).to(dtype)
    offset = (2 * torch.randn(N, 2 * groups * 9, H, W, device="cuda", generator=g)).to(dtype)
    mask = torch.rand(N, groups * 9, H, W, device="cuda", generator=g).to(dtype)
    weight = (0.05 * torch.randn(C, C, 3, 3, device="cuda", generator=g)).to(dtype)
    bias = torch.randn(C, device="cuda", generator=g).to(dtype)
    grad = torch.randn(N, C, H, W, device="cuda", generator=g).to(dtype)
    return x, offset, weight, bias, mask, grad


def kernel_times(fn):
    """{kernel name: microseconds} of one call of fn, from torch.profiler."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.key: round(e.device_time_total, 1) for e in prof.key_averages() if e.device_time_total > 0}


def main():
    import torchvision
    from triton.testing import do_bench

    torch.backends.cuda.matmul.allow_tf32 = False  # torchvision's float32 is float32
    impls = {"ours": ops.deform_conv2d, "torchvision": torchvision.ops.deform_conv2d}
    cases = []
    for dtype in (torch.float32, torch.float16):
        for groups in (1, 4):
            x, offset, weight, bias, mask, grad = inputs(dtype, groups)
            leaves = [t.clone().requires_grad_() for t in (x, offset, weight, bias, mask)]
            case = {"dtype": str(dtype).removeprefix("torch."), "offset_groups": groups, "ms": {}}
            for name, f in impls.items():

                def forward(f=f):
                    return f(x, offset, weight, bias, padding=1, mask=mask)

                def step(f=f):
                    return torch.autograd.grad(f(*leaves[:4], padding=1, mask=leaves[4]), leaves, grad)

                step()
                case["ms"][f"{name} forward"] = do_bench(forward, warmup=20, rep=150, return_mode="median")
                case["ms"][f"{name} forward+backward"] = do_bench(step, warmup=20, rep=150, return_mode="median")
                if groups == 1:
                    case[f"{name} kernels_us"] = kernel_times(step)
            ref = impls["torchvision"](*(t.double() for t in (x, offset, weight, bias)), padding=1, mask=mask.double())
            ours = ops.deform_conv2d(x, offset, weight, bias, padding=1, mask=mask).double()
            case["relative_error_vs_float64"] = float((ours - ref).norm() / ref.norm())
            ms = case["ms"]
            for p in ("forward", "forward+backward"):
                case[f"{p} speedup"] = ms[f"torchvision {p}"] / ms[f"ours {p}"]
            print(
                f"{case['dtype']:8s} og{groups}: forward ours {ms['ours forward']:.3f} ms torchvision "
                f"{ms['torchvision forward']:.3f} -> {case['forward speedup']:.2f}x | forward+backward ours "
                f"{ms['ours forward+backward']:.3f} torchvision {ms['torchvision forward+backward']:.3f} -> "
                f"{case['forward+backward speedup']:.2f}x | relative error vs float64 "
                f"{case['relative_error_vs_float64']:.2e}",
                flush=True,
            )
            cases.append(case)
    out = results.machine_dir() / "deform_conv-side-by-side.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "kind": "cuda",
        "shape": {"N": N, "C": C, "H": H, "W": W, "kernel": [3, 3], "padding": 1, "mask": True, "bias": True},
        "source": "python scripts/deform_conv_side_by_side.py",
        "cases": cases,
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {results.shown(out)}")


if __name__ == "__main__":
    if not torch.cuda.is_available():
        sys.exit("deform_conv_side_by_side: needs a CUDA GPU")
    main()
