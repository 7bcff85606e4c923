"""Exercise 7: the sum of a warp's 32 values, by shuffles.

A warp's 32 threads can read each other's registers: `shfl_down(v, k)` hands lane l the value of lane l + k (a
lane with l + k >= 32 gets its own value back). Adding the value 16 lanes up halves what is left to add: after that
step lanes 0..15 hold the sums of two values each; 8 lanes up, 4, 2, 1 more and lane 0 holds all 32. Five steps, no
shared memory, no barrier. Every warp loads 32 elements (0 past the end) and calls `warp_sum`; lane 0 adds the
result into the total. Write `warp_sum` in `ex7_warp_sum.h` (roughly 2 lines), as `warp_sum` in `sum.cu` does.
`Lanes` (cpu_warp.h) is one value per lane: on the GPU a thread's own float, on the CPU all 32 of the warp, with
`shfl_down` meaning the same on both, so you can do this exercise on a laptop and the same bugs show.

Checked against `x.double().sum()` on awkward sizes (1, 31, 32, 33, 1000, 4099, ...) on every device here.

In the reductions lesson; grade it with `check("ex7_warp_sum")`, or `python -m kit.grade ex7_warp_sum`."""

import torch

from kit.checks import begin, devices

NUMBER = 7  # its place in the lessons
EDIT = "exercises/ex7_warp_sum/ex7_warp_sum.h"  # the file to edit
SIZES = [1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 4099, (1 << 16) + 5]


def close(got, expected, x):
    """Within float32's rounding of a sum of x (the order of the adds differs from float64's)."""
    return abs(got - expected) <= 1e-5 * float(x.double().abs().sum()) + 1e-6


def lane0_after(x, offsets, add=True):
    """What lane 0 of each warp holds after shfl_down steps of these offsets (v += or, add=False, v =), summed over
    the warps: a float64 emulation of a warp_sum, right or wrong."""
    v = torch.nn.functional.pad(x.double(), (0, -len(x) % 32)).view(-1, 32)
    for k in offsets:
        down = torch.cat([v[:, k:], v[:, 32 - k :]], dim=1)  # lane l gets lane l + k; past lane 31, its own value
        v = v + down if add else down
    return float(v[:, 0].sum())


# (offsets, add, hint) of known wrong warp_sums; told apart on an input of several warps of distinct values
WRONG = [
    ((), True, "lane 0 kept its own value: no step ran (look at the loop's first offset and its condition)"),
    (
        (16, 8, 4, 2),
        True,
        "lane 0 has the even lanes only: the loop stopped one step early; its last step must be offset 1",
    ),
    (
        (16, 8, 4),
        True,
        "lane 0 has every fourth lane only: the loop stopped two steps early; its last step must be offset 1",
    ),
    ((8, 4, 2, 1), True, "only lanes 0..15 reached lane 0: the first step must reach half a warp away"),
    ((4, 2, 1), True, "only lanes 0..7 reached lane 0: the first step must reach half a warp away"),
    (
        (16, 8, 4, 2, 1),
        False,
        "lane 0 ended with one lane's value, not a sum: each step must add what "
        "shfl_down brings to v, not replace v with it",
    ),
]
DIAGNOSE = 32 * 37  # the input the hint is chosen on: 37 full warps


def diagnosis(op, dev):
    """The hint for the mistake op's warp_sum makes, told from its result on an input of 37 warps."""
    x = torch.randn(DIAGNOSE, generator=torch.Generator().manual_seed(7))
    got = float(op(x.to(dev)))
    return next(
        (hint for offsets, add, hint in WRONG if close(got, lane0_after(x, offsets, add), x)),
        "lane 0 must end with the sum of all 32 lanes: five steps, each adding the value of a lane half as "
        "far away as the step before, starting half a warp away",
    )


def grade(ops, kit_root):
    report, op = begin(ops, "ex7_warp_sum", EDIT)
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
        report.add(
            f"matches x.sum() on {dev}",
            False,
            f"smallest failing n = {n}: the sum should be {expected:.6g}, got {got:.6g}",
            diagnosis(op, dev),
        )
    return report
