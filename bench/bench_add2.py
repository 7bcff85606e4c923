"""add2 (c = a + b): ours (ops.add2) against torch.add, and the kernel of the Chinese add2 tutorial notebook 01
starts from (float32, GPU only).

Bytes: read a and b, write c: 3 * n * element size. There is one add per 12 bytes (float32), so it is a pure
bandwidth test: the best any add can do is about a copy's speed (measured beside it by run.py).
"""

import torch

from loader import ops

# From 2^24 elements on, where launch costs no longer matter: ours keeps up with torch.add, and moves at least 0.97
# of what a copy of the same bytes moves, in every dtype (a memory-bound kernel can do no better than a copy)
BARS = [
    {
        "op": "add2",
        "pass": "forward",
        "dtype": "float32",
        "min_n": 1 << 24,
        "impl": "ours",
        "vs": "torch",
        "at_least": 0.97,
        "device": "cuda",
    }
]
BARS += [
    {
        "op": "add2",
        "pass": "forward",
        "dtype": dtype,
        "min_n": 1 << 24,
        "impl": "ours",
        "vs": "copy",
        "at_least": 0.97,
        "device": "cuda",
    }
    for dtype in ("float32", "bfloat16")
]


def run(bench):
    ops.add2(torch.ones(4, device=bench.device), torch.ones(4, device=bench.device))  # build and register the op
    # the operator itself, as for torch.add: what ops.add2 adds on the host (its edit check and friendly call) is
    # measured apart, per call, by bench/calls.py
    ours, seed = torch.ops.labkit.add2, torch.ops.labkit.add2_seed
    for dtype in (torch.float32, torch.bfloat16):
        for n in bench.sizes:
            a = torch.randn(n, device=bench.device, dtype=dtype)
            b = torch.randn(n, device=bench.device, dtype=dtype)
            nbytes = 3 * n * a.element_size()
            bench.measure("add2", "forward", dtype, n, "ours", lambda: ours(a, b), nbytes)
            bench.measure("add2", "forward", dtype, n, "torch", lambda: torch.add(a, b), nbytes)
            if dtype == torch.float32 and bench.device.type == "cuda":  # the tutorial's kernel: float32, CUDA only
                bench.measure("add2", "forward", dtype, n, "seed", lambda: seed(a, b), nbytes)
            a = b = None  # free this size's inputs before allocating the next (2 GB at 2^28 float32)
