"""The first three calls of torch.add and of ops.add2 in a fresh Python process, each timed to its end.
Usage: cold_start.py DEVICE."""

import sys
import time

import torch

from kit.programs import report
from kit.timing import synchronizer
from loader import ops

dev = torch.device(sys.argv[1])
wait = synchronizer(dev)
a, b = torch.randn(1024, device=dev), torch.randn(1024, device=dev)  # small: the one-time costs are the point
wait()  # the GPU is set up now (CUDA context, random-number kernel): not part of what is timed
out = {}
for name, fn in (("torch.add", lambda: torch.add(a, b)), ("ops.add2", lambda: ops.add2(a, b))):
    out[name] = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        wait()
        out[name].append(time.perf_counter() - t0)
report(out)
