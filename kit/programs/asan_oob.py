"""The CPU out-of-bounds write, with the debug_lab of a scratch kit built with AddressSanitizer.
Usage: asan_oob.py KERNELS BUILD_DIR N COUNT (kit.sanitizers.asan_oob prepares the copy and the environment)."""

import sys

import torch

from loader import Ops

kernels, build, n, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lab = Ops(kernels, build_dir=build)
y = torch.zeros(n)
lab.debug_lab("oob_write", y, count=count)
print("not caught", flush=True)
