"""For compute-sanitizer's memcheck: an out-of-bounds write three floats past the end of a tensor."""

import torch

from loader import ops

y = torch.zeros(1000, device="cuda")
ops.debug_lab("oob_write", y, count=1003)  # three floats past the end
torch.cuda.synchronize()
