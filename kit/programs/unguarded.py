"""The multi-GPU lesson's scenario: tensors on cuda:DATA while cuda:CURRENT is the current device, then add2 of the
given version. Usage: unguarded.py VERSION DATA CURRENT [peer]. "peer" makes a cross-device copy first, which makes
PyTorch enable peer access between the two GPUs; then a wrong-GPU kernel may silently read the other GPU's memory."""

import sys

import torch

from kit.programs import report
from loader import ops

version, data, current = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = 1 << 20
a = torch.ones(n, device=f"cuda:{data}")
b = torch.full((n,), 2.0, device=f"cuda:{data}")
if sys.argv[4:] == ["peer"]:
    _ = a.to(f"cuda:{current}")
torch.cuda.set_device(current)
c = ops.add2(a, b, version=version)
torch.cuda.synchronize(data)
torch.cuda.synchronize(current)
report(
    {"correct": bool((c == 3).all()), "device_of_c": str(c.device), "current_device_after": torch.cuda.current_device()}
)
