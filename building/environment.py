"""What decides a build: CUDA or CPU, torch's cpp_extension (imported with a working CUDA_HOME), and where builds go.
The loader (loader.py), the doctor and the AOT/CMake builds all ask these, so they give one answer."""

import functools
import os
import shutil
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent  # the kit: kernels/, loader.py, ...
KERNELS = ROOT / "kernels"  # the lessons' ops, one folder each, and common/
COMMON = KERNELS / "common"  # the headers every op shares, the exercises' too
EXERCISES = ROOT / "exercises"  # one folder per exercise: its spec and check (check.py), its stub


def cuda_build_wanted():
    """Build .cu files only where they can run: a CUDA build of torch, a GPU, and nvcc.
    LABKIT_CUDA=1 forces a CUDA build (to compile-check .cu files on a machine without a GPU), 0 forbids it."""
    forced = os.environ.get("LABKIT_CUDA")
    if forced in ("0", "1"):
        return forced == "1"
    return _cuda_usable()


@functools.cache
def _cuda_usable():
    return bool(torch.version.cuda and torch.cuda.is_available() and cpp_extension().CUDA_HOME)


@functools.cache
def cpp_extension():
    """torch.utils.cpp_extension, imported quietly and with CUDA_HOME pointing at a real toolkit.
    Without CUDA_HOME, torch takes the folder above `which nvcc`'s bin/; where nvcc is a wrapper script
    (/usr/local/bin/nvcc), that folder has no CUDA headers, so we try /usr/local/cuda first."""
    import logging

    if not (os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")):
        nvcc = shutil.which("nvcc")
        guess = Path(nvcc).resolve().parent.parent if nvcc else None
        if (
            guess
            and not (guess / "include" / "cuda_runtime_api.h").exists()
            and Path("/usr/local/cuda/include/cuda_runtime_api.h").exists()
        ):
            os.environ["CUDA_HOME"] = "/usr/local/cuda"
    quiet = logging.getLogger("torch.utils.cpp_extension")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "No CUDA runtime is found" warning on import: the doctor says it better
    try:
        from torch.utils import cpp_extension as module
    finally:
        quiet.setLevel(level)
    return module


def arch_specific_targets():
    """nvcc's targets for an op whose kernels use instructions of one GPU architecture alone (its op.py says
    ARCH_SPECIFIC = True: Hopper's wgmma and setmaxnreg exist for sm_90a, not plain sm_90). A TORCH_CUDA_ARCH_LIST
    that is set decides, as for every op ([]: torch's own flags). Unset, torch builds for the GPUs present, a Hopper
    GPU as plain sm_90; then each present GPU's own target, sm_90a for Hopper (torch takes no targets of its own once
    the flags name one)."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST") or not torch.cuda.is_available():
        return []
    caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
    if (9, 0) not in caps:
        return []
    targets = [f"{major}{minor}" + ("a" if (major, minor) == (9, 0) else "") for major, minor in caps]
    return [f"-gencode=arch=compute_{t},code=sm_{t}" for t in targets]


def build_root():
    """Where builds go: $LABKIT_BUILD_DIR, else .build/ beside kernels/, one folder per torch version and kind."""
    return Path(os.environ.get("LABKIT_BUILD_DIR", ROOT / ".build"))


def torch_uses_lock_file():
    """Older torch (before 2.14) guards a build folder with a plain `lock` file that a killed build leaves behind."""
    return not hasattr(cpp_extension(), "FileLock")
