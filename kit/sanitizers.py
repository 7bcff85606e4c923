"""Memory and race checkers on the broken kernels of kernels/debug_lab/, each in a child process (kit/programs/):
compute-sanitizer's memcheck and racecheck on the GPU, AddressSanitizer on the CPU, and the lines of their reports
that matter. For 05_debugging.ipynb and the tests (tests/conftest.py: assert_sanitizer_clean).
"""

import os
import re
import shutil
import subprocess

from kit.devices import PROGRAMS, run_isolated, run_program
from kit.resources import tool

# the child programs the lesson runs under compute-sanitizer
MEMCHECK_PROGRAM = PROGRAMS / "memcheck_oob.py"
RACECHECK_PROGRAM = PROGRAMS / "racecheck_reverse.py"


def sanitize(check, program, caching=False, timeout=600):
    """Run a child program under `compute-sanitizer --tool <check>`; returns (Isolated, its report lines). program:
    a file of kit/programs/ (MEMCHECK_PROGRAM, RACECHECK_PROGRAM), or a string of Python code.

    caching=False sets PYTORCH_NO_CUDA_MEMORY_CACHING=1: PyTorch then asks CUDA for each tensor's memory, instead of
    cutting tensors from big blocks it keeps. memcheck knows only what CUDA handed out, so with caching on, a write
    just past a tensor lands inside one of those blocks and looks fine to it."""
    exe = tool("compute-sanitizer")
    if exe is None:
        raise FileNotFoundError("compute-sanitizer not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    wrapper = [exe, "--tool", check, "--show-backtrace", "no"] + (
        ["--print-limit", "10"] if check == "memcheck" else []
    )
    env = {} if caching else {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    if isinstance(program, str):
        r = run_isolated(program, env=env, wrapper=wrapper, timeout=timeout)
    else:
        r = run_program(program.stem, env=env, wrapper=wrapper, timeout=timeout)
    lines = [ln for ln in (r.stdout + "\n" + r.stderr).splitlines() if ln.startswith("=========")]
    return r, lines


def findings(lines):
    """A sanitizer report without its "Program hit cudaError..." notes: CUDA calls PyTorch makes, and expects to
    fail, while it starts (the checks report those too, and they are not our kernel's)."""
    out, skipping = [], False
    for line in lines:
        body = line[len("=========") :]
        if "Program hit" in body:
            skipping = True
            continue
        if skipping and body.startswith("     "):  # the note's indented continuation lines
            continue
        skipping = False
        if body.strip():
            out.append(line)
    return out


# -- AddressSanitizer: the CPU's memory checker ----------------------------------------------------------------------


def asan_runtime():
    """The AddressSanitizer runtime of the C++ compiler the loader uses (libasan.so), or None."""
    from building.toolchain import safe_cxx

    cxx = safe_cxx()[0] or os.environ.get("CXX") or "c++"
    try:
        path = subprocess.run(
            [*cxx.split(), "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except OSError:
        return None
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


def asan_oob(n=1000, count=1001):
    """The CPU out-of-bounds write under AddressSanitizer, in a child: a scratch copy of debug_lab whose op.py adds
    CXX_FLAGS = ["-g1", "-fsanitize=address"] (-g1: the line tables a report needs, not the full debug information
    that made the binding's compile a fifth longer), run with the ASan runtime preloaded (Python itself is not built
    with ASan, so its runtime must be loaded first). Returns the Isolated; asan_report() picks out the lines that
    matter."""
    from kit.notebook import scratch_kit

    lib = asan_runtime()
    if lib is None:
        raise FileNotFoundError("no AddressSanitizer runtime (libasan.so) for this C++ compiler")
    _, kernels = scratch_kit("debug_lab")
    with open(kernels / "debug_lab" / "op.py", "a") as f:
        f.write('\nCXX_FLAGS = ["-g1", "-fsanitize=address"]  # added by kit.sanitizers.asan_oob\n')
    try:
        # detect_leaks=0: Python keeps memory until exit on purpose, which LeakSanitizer would report at length.
        # A CPU build, and no GPU for the child: the CUDA driver, once started, reserves address ranges that can
        # collide with the ones AddressSanitizer claims, and this lesson is about the CPU anyway.
        env = {"LD_PRELOAD": lib, "ASAN_OPTIONS": "detect_leaks=0", "LABKIT_CUDA": "0", "CUDA_VISIBLE_DEVICES": ""}
        return run_program("asan_oob", kernels, kernels.parent / "build", n, count, env=env, timeout=900)
    finally:
        shutil.rmtree(kernels.parent, ignore_errors=True)  # the scratch copy and its build: used by the child only


def asan_report(text):
    """The lines of an AddressSanitizer report that say what, where and whose memory."""
    keep = []
    for line in text.splitlines():
        s = line.strip()
        if (
            "ERROR: AddressSanitizer" in s
            or s.startswith(("WRITE of", "READ of", "allocated by"))
            or " is located " in s
        ):
            keep.append(s)
        elif re.match(r"#[01] ", s) and keep:  # the two innermost frames of each stack: where, and who called it
            keep.append("  " + re.sub(r"0x[0-9a-f]+ in ", "", s))
        elif s.startswith("SUMMARY:"):
            keep.append(s)
            break
    return keep
