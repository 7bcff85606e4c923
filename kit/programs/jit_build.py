"""The loader's build of some ops, timed inside one Python process as a student meets it: the first call, then (with
an op to edit) the call after a one-line kernel edit, with no restart. Usage: jit_build.py KERNELS BUILD_DIR CUDA(0/1)
EDIT_OP|- OP...  (kit.build_ways.build_jit)."""

import sys
import time

from building.builds import touch_kernel
from kit.programs import report
from loader import Ops

kernels, build, cuda, edit, ops = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5:]
lab = Ops(kernels, build_dir=build)
t0 = time.perf_counter()
for op in ops:
    getattr(lab, op).refresh()
cold = time.perf_counter() - t0
rebuild = None
if edit != "-":
    touch_kernel(kernels, edit, cuda)
    t0 = time.perf_counter()
    getattr(lab, edit).refresh()
    rebuild = time.perf_counter() - t0
report({"cold": cold, "rebuild": rebuild, "libraries": {op: str(getattr(lab, op).op._so) for op in ops}})
