"""What a caller pays for one call: `ops.<op>` (the kit's friendly call, edit check included), the registered
operator `torch.ops.labkit.<op>`, and PyTorch's own op, at the small sizes where every op is host-bound (n = 64 on
the CPU, 1024 on the GPU: elements per input; matmul multiplies two sqrt(n) x sqrt(n) matrices), with and without
requires_grad. On a GPU also one call end to end: CUDA events just
before and after it, the GPU idle before (what a harness timing one submission sees).

roi_align and nms are timed against torchvision's (their peer; rows only where torchvision is installed): roi_align
on an input of n elements (n / 64 channels of 8 x 8), 4 boxes, a 2 x 2 output; nms on n / 4 boxes.

The bar (issues 13, 16 and 17): ops.<op> costs at most 2.5x PyTorch's op per call, in every row. The ratios come
from one run with the callables taken in turn (kit.timing.per_call), so a slow moment of the machine slows all of
them alike.
"""

import math

import torch
import torch.nn.functional as F

from kit import timing
from loader import ops

BAR = 2.5
SIZES = {"cpu": 64, "cuda": 1024}


def cases(device, n):
    """(op, grad, {impl: fn}) with impl "ops" (ops.<op>), "registered" (torch.ops.labkit.<op>), "torch"."""
    a = torch.randn(n, device=device)
    b = torch.randn(n, device=device)
    ag = a.clone().requires_grad_()
    m = torch.randn(math.isqrt(n), math.isqrt(n), device=device)
    mg = m.clone().requires_grad_()
    add2, elu, sum_ = torch.ops.labkit.add2.default, torch.ops.labkit.elu.default, torch.ops.labkit.sum.default
    mm = torch.ops.labkit.matmul.default
    return [
        (
            "add2",
            False,
            {"ops": lambda: ops.add2(a, b), "registered": lambda: add2(a, b), "torch": lambda: torch.add(a, b)},
        ),
        (
            "add2",
            True,
            {"ops": lambda: ops.add2(ag, b), "registered": lambda: add2(ag, b), "torch": lambda: torch.add(ag, b)},
        ),
        ("elu", False, {"ops": lambda: ops.elu(a), "registered": lambda: elu(a, 1.0), "torch": lambda: F.elu(a)}),
        ("elu", True, {"ops": lambda: ops.elu(ag), "registered": lambda: elu(ag, 1.0), "torch": lambda: F.elu(ag)}),
        ("sum", False, {"ops": lambda: ops.sum(a), "registered": lambda: sum_(a, None), "torch": lambda: torch.sum(a)}),
        (
            "sum",
            True,
            {"ops": lambda: ops.sum(ag), "registered": lambda: sum_(ag, None), "torch": lambda: torch.sum(ag)},
        ),
        (
            "matmul",
            False,
            {"ops": lambda: ops.matmul(m, m), "registered": lambda: mm(m, m), "torch": lambda: torch.matmul(m, m)},
        ),
        (
            "matmul",
            True,
            {"ops": lambda: ops.matmul(mg, m), "registered": lambda: mm(mg, m), "torch": lambda: torch.matmul(mg, m)},
        ),
    ] + detection_cases(device, n)


def detection_cases(device, n):
    """roi_align's and nms's rows, against torchvision's ops: none where torchvision is not installed."""
    try:
        import torchvision
    except ImportError:
        return []
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, n // 64, 8, 8, generator=g).to(device)
    xg = x.clone().requires_grad_()
    rois = torch.tensor([[0, 0.5, 0.5, 6.0, 7.0], [0, 2.0, 1.0, 5.0, 3.0], [0, 0, 0, 8, 8], [0, 3.3, 4.1, 7.9, 6.2]])
    rois = rois.to(device)
    corners = torch.rand(n // 4, 2, generator=g) * 100
    boxes = torch.cat([corners, corners + 5 + torch.rand(n // 4, 2, generator=g) * 20], dim=1).to(device)
    scores = torch.rand(n // 4, generator=g).to(device)
    roi, nms = torch.ops.labkit.roi_align.default, torch.ops.labkit.nms.default
    tv_roi = torchvision.ops.roi_align
    return [
        (
            "roi_align",
            grad,
            {
                "ops": lambda t=t: ops.roi_align(t, rois, 2, 1.0, 2),
                "registered": lambda t=t: roi(t, rois, 1.0, 2, 2, 2, False, 2),
                "torch": lambda t=t: tv_roi(t, rois, 2, 1.0, 2),
            },
        )
        for grad, t in ((False, x), (True, xg))
    ] + [
        (
            "nms",
            False,
            {
                "ops": lambda: ops.nms(boxes, scores, 0.5),
                "registered": lambda: nms(boxes, scores, 0.5),
                "torch": lambda: torchvision.ops.nms(boxes, scores, 0.5),
            },
        )
    ]


def measure(device, log=print):
    """Rows of per-call host times (and end-to-end times on a GPU) on `device`."""
    device = torch.device(device)
    n = SIZES[device.type]
    x = torch.ones(4, device=device)
    ops.add2(x, x), ops.elu(x), ops.sum(x), ops.matmul(x[:, None], x[None])  # build and load before timing
    ops.roi_align(x.view(1, 1, 2, 2), torch.zeros(1, 5, device=device), 1), ops.nms(x.view(1, 4), x[:1], 0.5)
    rows = []
    for op, grad, fns in cases(device, n):
        host = timing.per_call(fns, device=device)
        row = {
            "op": op,
            "grad": grad,
            "device": device.type,
            "n": n,
            "host_us": {impl: t.median * 1e6 for impl, t in host.items()},
            "host_q25_us": {impl: t.q25 * 1e6 for impl, t in host.items()},
            "host_q75_us": {impl: t.q75 * 1e6 for impl, t in host.items()},
        }
        if device.type == "cuda":
            row["end_to_end_us"] = {impl: timing.end_to_end(fn, device).median * 1e6 for impl, fn in fns.items()}
        row["ratio"] = row["host_us"]["ops"] / row["host_us"]["torch"]
        row["status"] = "PASS" if row["ratio"] <= BAR else "FAIL"
        rows.append(row)
        log(
            f"  {op}{' (requires_grad)' if grad else ''} on {device.type}, n={n}: "
            + ", ".join(f"{impl} {us:.2f} us" for impl, us in row["host_us"].items())
            + f"; ops/torch {row['ratio']:.2f}x "
            f"({row['status']})"
        )
    return rows


def markdown(rows):
    e2e = any("end_to_end_us" in r for r in rows)
    head = (
        "| op | requires_grad | device | n | ops.<op> us | torch.ops.labkit us | PyTorch us | ops/PyTorch | bar |"
        + (" end to end: ops / PyTorch us |" if e2e else "")
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        h = r["host_us"]
        line = (
            f"| {r['op']} | {r['grad']} | {r['device']} | {r['n']} | {h['ops']:.2f} | {h['registered']:.2f} | "
            f"{h['torch']:.2f} | {r['ratio']:.2f}x | {r['status']} (<= {BAR}x) |"
        )
        if e2e:
            e = r.get("end_to_end_us")
            line += f" {e['ops']:.1f} / {e['torch']:.1f} |" if e else " - |"
        lines.append(line)
    return "\n".join(lines)
