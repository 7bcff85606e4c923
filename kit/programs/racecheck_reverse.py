"""For compute-sanitizer's racecheck: the right block reversal, then the racy one."""

import torch

from loader import ops

x = torch.arange(256 * 8, dtype=torch.float32, device="cuda")
ops.debug_lab("smem_reverse", x)  # the right kernel first: racecheck must say nothing about it
ops.debug_lab("smem_race", x)
torch.cuda.synchronize()
