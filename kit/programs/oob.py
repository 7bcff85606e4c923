"""ops.debug_lab("oob_write", y, count) on a y of n floats, then a later call and a wait.
Usage: oob.py DEVICE N COUNT. Each step prints its name before it runs (kit.debugging.STEPS), so the output says which
statement was running when the process failed, even when it dies of a signal."""

import sys

import torch

from kit.programs import report
from loader import ops

device, n, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
y = torch.zeros(n, device=device)


def step(name):
    print("step:", name, flush=True)


try:
    step("launch")
    ops.debug_lab("oob_write", y, count=count)
    step("next call")
    z = torch.ones(8, device=device) * 2
    step("wait")
    z.sum().item()
    step("done")
except Exception as e:  # torch.AcceleratorError for a CUDA error (a RuntimeError)
    print("error:", str(e).splitlines()[0], flush=True)
    sticky = None
    if device == "cuda":  # is the GPU still usable by this process?
        try:
            (torch.zeros(1, device="cuda") + 1).item()
            sticky = False
        except Exception:
            sticky = True
    report({"error": str(e), "type": type(e).__name__, "sticky": sticky})
else:
    report({"error": None, "head": y[:4].tolist()})
