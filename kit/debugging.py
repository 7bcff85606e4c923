"""The debugging lesson's kernels, for 05_debugging.ipynb and its tests: printf output caught in the notebook's own
cell, and the broken kernels of kernels/debug_lab/ run in child processes (kit/programs/: the asynchronous error,
CUDA_LAUNCH_BLOCKING, an overrun the caching allocator hides, a shared-memory race), with the source lines the tools
must name. The checkers are in kit/sanitizers.py, registers and occupancy in kit/resources.py, --use_fast_math in
kit/fast_math.py, and the GPU machine's recording of it all in kit/record_debug.py.
"""

import contextlib
import ctypes
import os
import sys
import tempfile
from pathlib import Path

import torch

import loader
from kit.devices import run_program

ROOT = loader.ROOT
DEBUG_CU = ROOT / "kernels" / "debug_lab" / "debug_lab.cu"
DEBUG_CPU = ROOT / "kernels" / "debug_lab" / "debug_lab_cpu.cpp"

# -- printf ---------------------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None)  # the process's C library: its fflush, for C's stdout buffer


class Printed:
    """What a printed() block wrote to file descriptor 1 (its .text, once the block is over)."""

    text = ""


@contextlib.contextmanager
def printed(echo=True):
    """Catch what C, C++ and CUDA code print to file descriptor 1 inside the block, and print it here, with Python.

    printf (the CPU's, and the GPU's, which the CUDA runtime prints on its behalf) writes to file descriptor 1 of the
    process, below Python. A notebook cell shows what Python's sys.stdout receives; fd 1 reaches it late, in another
    cell, or only in the terminal that started Jupyter. So for the block, fd 1 points at a temporary file; at its end
    every GPU is synchronised (the GPU's printf buffer is printed at a synchronising call, not at the printf), C's
    stdout buffer is flushed (it is block-buffered when fd 1 is a file), fd 1 is put back, and the text is printed
    with Python's print: into this cell, in order. echo=False only keeps it in .text."""
    out = Printed()
    sys.stdout.flush()
    _libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield out
        finally:
            try:
                if torch.cuda.is_initialized():
                    for d in range(torch.cuda.device_count()):
                        torch.cuda.synchronize(d)
            finally:  # even if the GPU reports an error at the synchronisation: fd 1 must come back
                _libc.fflush(None)
                os.dup2(saved, 1)
                os.close(saved)
                tmp.seek(0)
                out.text = tmp.read().decode(errors="replace")
                if echo:
                    print(out.text, end="", flush=True)


# -- the lines the tools must name ---------------------------------------------------------------------------------


def line_of(path, text):
    """The line number (from 1) of the first line of `path` containing `text`: where a report should point."""
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if text in line:
            return i
    raise ValueError(f"{text!r} not found in {path}")


# The lines the tools must name (found by content, so edits to the files move them along)
OOB_LINE = ("y[i] = float(i);", DEBUG_CU)
RACE_WRITE_LINE = ("// the write", DEBUG_CU)
RACE_READ_LINE = ("// the read:", DEBUG_CU)
CPU_OOB_LINE = ("y[i] = float(i);", DEBUG_CPU)


def where(mark):
    """'debug_lab.cu:41' for one of the marks above."""
    text, path = mark
    return f"{path.name}:{line_of(path, text)}"


# -- the broken kernels, in child processes -------------------------------------------------------------------------

# Each step of kit/programs/oob.py prints its name first, so that the child's output says which statement was running
# when it failed, even when it dies of a signal. The third statement is the first that waits for the device.
STEPS = {
    "launch": "ops.debug_lab('oob_write', y, count=...)",
    "next call": "z = torch.ones(8, device=...) * 2",
    "wait": "z.sum().item()",
    "done": "(all three ran)",
}


def oob_run(device, count, n=1000, env=None, wrapper=(), timeout=300):
    """ops.debug_lab("oob_write", y, count) on a y of n floats, then a later call and a wait, in a child process
    (kit/programs/oob.py).

    Returns (Isolated, step) where step is the statement that was running when it failed or crashed ("done" if none).
    """
    r = run_program("oob", device, n, count, env=env, wrapper=wrapper, timeout=timeout)
    steps = [ln.split(":", 1)[1].strip() for ln in r.stdout.splitlines() if ln.startswith("step:")]
    return r, (steps[-1] if steps else None)


def oob_into_a_neighbour():
    """A few floats past the end of y, with PyTorch's caching allocator: no error, and the tensor after y changes."""
    return run_program("oob_neighbour")


def race_run():
    """The racy and the right block reversal, 20 times each on 2^20 floats: how many elements each got wrong."""
    return run_program("race")


def printf_run():
    """printf_kernel in a child process, whose stdout comes back as text: the other way to see device printf."""
    return run_program("printf")
