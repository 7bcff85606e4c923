"""Exercise 7: the sum of a warp's 32 values, by shuffles.

Every warp loads 32 elements (0 past the end) and calls `warp_sum`; lane 0 adds the result into the total. Write
`warp_sum` in `ex7_warp_sum.h` (roughly 2 lines): five `shfl_down` steps, offsets 16, 8, 4, 2, 1. On a laptop, the
CPU runs the same function on a whole warp at once (`Lanes`, cpu_warp.h), so the same bugs show.

Checked against `x.double().sum()` on awkward sizes (1, 31, 32, 33, 1000, 4099, ...) on every device here.

In the reductions lesson; grade it with `check("ex7_warp_sum")`, or `python -m kit.grade ex7_warp_sum`."""

import torch

from kit.checks import Report, devices, load_op

NUMBER = 7  # its place in the lessons
EDIT = "kernels/ex7_warp_sum/ex7_warp_sum.h"  # the file to edit
SIZES = [1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 4099, (1 << 16) + 5]


def close(got, expected, x):
    """Within float32's rounding of a sum of x (the order of the adds differs from float64's)."""
    return abs(got - expected) <= 1e-5 * float(x.double().abs().sum()) + 1e-6


def wrong_answers(x):
    """(what a known wrong warp_sum would return, its hint): sums a float64 emulation of the mistake."""
    w = torch.nn.functional.pad(x.double(), (0, -len(x) % 32)).view(-1, 32)
    return [(float(w[:, :16].sum()), "only lanes 0..15 reached lane 0: the first offset must be 16 (half a warp), "
                                     "then 8, 4, 2, 1"),
            (float(w[:, 31].sum()), "lane 0 ended with one lane's value, not the sum: each step must add what "
                                    "shfl_down brings (v += ...), not replace v with it"),
            (float(w[:, 0].sum()), "lane 0 kept its own value: did a step run at all? (offset = 16; offset > 0; "
                                   "offset /= 2)")]


def grade(ops, kit_root):
    report = Report("ex7_warp_sum", EDIT)
    op = load_op(ops, "ex7_warp_sum", report)
    if op is None:
        return report
    for dev in devices():
        failure = None
        for n in SIZES:
            x = torch.randn(n, generator=torch.Generator().manual_seed(n))
            got, expected = float(op(x.to(dev))), float(x.double().sum())
            if not close(got, expected, x):
                failure = (n, expected, got, x)
                break
        if failure is None:
            report.add(f"matches x.sum() on {dev}", True, f"{len(SIZES)} sizes from {SIZES[0]} to {SIZES[-1]}")
            continue
        n, expected, got, x = failure
        hint = next((h for value, h in wrong_answers(x) if close(got, value, x)),
                    "lane 0 must end with the sum of all 32 lanes: offsets 16, 8, 4, 2, 1, each step "
                    "v += shfl_down(v, offset)")
        report.add(f"matches x.sum() on {dev}", False,
                   f"smallest failing n = {n}: the sum should be {expected:.6g}, got {got:.6g}", hint)
    return report
