"""sum's part of `make bench` (bench/run.py imports this file and calls `run(bench)`).

The sum of every element: ours (version 5, torch.ops.labkit.sum) against torch.sum, float32 and bfloat16 at every
size of bench.sizes, and on a GPU the lesson's versions 1-4 (float32; atomics up to 2^24 elements, where they
already take milliseconds). The sum of each row (dim=-1) on the three shapes of the lesson, each 2^24 elements:
(4096, 4096), (65536, 256) and (256, 65536), as passes "rows-<shape>".

Bytes: a sum reads x once and writes one number per row: n * element size. run.py sets it beside a copy of the same
bytes (half read, half written), the ceiling of any memory-bound kernel; a read-only kernel can come near it.
"""

import torch

from loader import ops

BIG = 1 << 24
ROW_SHAPES = [(4096, 4096), (65536, 256), (256, 65536)]
VERSIONS = {"atomic": 1, "interleaved": 2, "sequential": 3, "warp": 4}

# From 2^24 elements, the sum at least as fast as torch.sum in float32 and bfloat16; each row sum as fast as
# torch.sum(x, dim=-1) on each shape: the lesson's two-pass kernel is what torch.sum does, so it should keep up
BARS = [
    {
        "op": "sum",
        "pass": "all",
        "dtype": dtype,
        "min_n": BIG,
        "impl": "ours",
        "vs": "torch",
        "at_least": 1.00,
        "device": "cuda",
    }
    for dtype in ("float32", "bfloat16")
]
BARS += [
    {
        "op": "sum",
        "pass": f"rows-{r}x{c}",
        "dtype": dtype,
        "min_n": 0,
        "impl": "ours",
        "vs": "torch",
        "at_least": 1.00,
        "device": "cuda",
    }
    for r, c in ROW_SHAPES
    for dtype in ("float32", "bfloat16")
]


def run(bench):
    dev = bench.device
    ops.sum(torch.ones(8, device=dev))  # build and load the op before anything is timed
    ours, version = torch.ops.labkit.sum.default, torch.ops.labkit.sum_version.default
    for dtype in (torch.float32, torch.bfloat16):
        for n in bench.sizes:
            x = torch.randn(n, device=dev, dtype=dtype)
            nbytes = n * x.element_size()
            bench.measure("sum", "all", dtype, n, "ours", lambda: ours(x, None), nbytes)
            bench.measure("sum", "all", dtype, n, "torch", lambda: torch.sum(x), nbytes)
            if dtype == torch.float32 and dev.type == "cuda":
                for name, v in VERSIONS.items():
                    if name != "atomic" or n <= BIG:
                        bench.measure("sum", "all", dtype, n, name, lambda v=v: version(x, v), nbytes)
            x = None
        for shape in ROW_SHAPES:
            x = torch.randn(shape, device=dev, dtype=dtype)
            nbytes = x.numel() * x.element_size() + shape[0] * x.element_size()
            pass_ = f"rows-{shape[0]}x{shape[1]}"
            bench.measure("sum", pass_, dtype, x.numel(), "ours", lambda: ours(x, -1), nbytes)
            bench.measure("sum", pass_, dtype, x.numel(), "torch", lambda: torch.sum(x, dim=-1), nbytes)
            x = None
