"""The racy and the right block reversal, 20 times each on 2^20 floats: how many elements each got wrong."""

import torch

from kit.programs import report
from loader import ops

x = torch.randn(256 * 4096, device="cuda")
expected = x.view(-1, 256).flip(1).reshape(-1)
wrong = [int((ops.debug_lab("smem_race", x) != expected).sum()) for _ in range(20)]
right = [int((ops.debug_lab("smem_reverse", x) != expected).sum()) for _ in range(20)]
report({"n": x.numel(), "race_wrong": wrong, "reverse_wrong": right})
