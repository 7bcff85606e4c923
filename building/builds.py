"""The same kernels/<op>/ files built ahead of time: as a package pip installs (aot/: setuptools with torch's
BuildExtension), and with CMake against libtorch (cmake/). `make aot`, `make cmake` (python -m building.builds cmake),
tests/test_builds.py, and kit/build_ways.py (the three ways timed side by side, for 05_debugging.ipynb).

Every build works on a fresh copy of the kit (checkout()) and runs in child processes: this process may hold the JIT
loader's ops already, and loading a second library for labkit::add2 here would replace their kernels.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from building import precompiled_header
from building.environment import ROOT, build_root, cpp_extension, cuda_build_wanted
from building.toolchain import safe_cxx


def lesson_ops(kernels=ROOT / "kernels"):
    """The op folders of kernels/: each folder with an op.py, in name order (common/ has none; the exercises, students'
    ops that fail until they are solved, live in exercises/, which no build way builds)."""
    return tuple(sorted(p.parent.name for p in Path(kernels).glob("*/op.py")))


# what `make aot`, `make cmake` and tests/test_builds.py build: every op found, so a new folder joins them unedited
DEFAULT_OPS = lesson_ops()


class BuildFailed(RuntimeError):
    def __init__(self, way, log):
        self.way, self.log = way, log
        super().__init__(f"the {way} build failed; the end of its output:\n{log[-4000:]}")


@dataclass
class Built:
    """One build: how long it took, the library of each op, and what a child process needs to use them."""

    way: str
    cuda: bool
    seconds: float  # wall clock of the build, cold
    libraries: dict  # op -> Path of its shared library
    env: dict = field(default_factory=dict)  # for a child: LABKIT_PREBUILT (and PYTHONPATH) so tests use these ops
    log: str = ""
    rebuild_seconds: float = None  # after a one-line kernel edit, if measured
    src: Path = None  # the checkout it was built from


def checkout(dst, ops=DEFAULT_OPS):
    """Copy what a build needs into dst: loader.py, building/, kit/, aot/, cmake/ and kernels/ (common/ and `ops`)."""
    dst = Path(dst)
    ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".ipynb_checkpoints")
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "loader.py", dst / "loader.py")
    for folder in ("building", "kit", "aot", "cmake"):
        shutil.copytree(ROOT / folder, dst / folder, ignore=ignore, dirs_exist_ok=True)
    for op in ("common", *ops):
        shutil.copytree(ROOT / "kernels" / op, dst / "kernels" / op, ignore=ignore, dirs_exist_ok=True)
    return dst


def op_flags(kernels, op):
    """An op.py's CXX_FLAGS and CUDA_FLAGS, read without defining its schemas (aot/setup.py and CMake need them)."""
    spec = importlib.util.spec_from_file_location(f"labkit_flags_{op}", Path(kernels) / op / "op.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(getattr(mod, "CXX_FLAGS", [])), list(getattr(mod, "CUDA_FLAGS", []))


def cuda_arch_list():
    """TORCH_CUDA_ARCH_LIST for a CUDA build: as set, else the visible GPUs' (the JIT default), else 9.0 (H100/H200),
    which makes a machine without a GPU compile-check the .cu files for one architecture, not a dozen."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return os.environ["TORCH_CUDA_ARCH_LIST"]
    if torch.cuda.is_available():
        caps = {torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}
        return ";".join(f"{major}.{minor}" for major, minor in sorted(caps))
    return "9.0"


def _env(cuda):
    """The build's environment: CUDA or not, and no shared compiler cache (LABKIT_CACHE_DIR empty): the ways are
    compared compiling, cold and after an edit, not reading a cache."""
    arch = {"TORCH_CUDA_ARCH_LIST": cuda_arch_list()} if cuda else {}
    return {"LABKIT_CUDA": "1" if cuda else "0", "LABKIT_CACHE_DIR": "", **arch}


def touch(path):
    """Move a just-written file's mtime 1 ms on: on a file system with a coarse clock, an edit right after a build
    could otherwise keep the build's mtime, and neither the loader nor ninja would see it."""
    st = Path(path).stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def touch_kernel(kernels, op, cuda):
    """A one-line kernel edit: a comment appended to the op's .cu (CUDA build) or CPU kernel file. Returns the file."""
    path = Path(kernels) / op / (f"{op}.cu" if cuda else f"{op}_cpu.cpp")
    with open(path, "a") as f:
        f.write("// edited, to time a rebuild\n")
    touch(path)
    return path


def _run(way, cmd, env=None, cwd=None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=1800)
    seconds = time.perf_counter() - t0
    log = f"$ {' '.join(map(str, cmd))}\n{r.stdout}{r.stderr}"
    if r.returncode:
        raise BuildFailed(way, log)
    return seconds, log


# -- AOT: setuptools, pip ---------------------------------------------------------------------------------------------


def build_aot(src, ops, cuda):
    """`pip install` of src/aot into src/site (--target), from the copy's kernels/. Timed: the whole pip command."""
    site = src / "site"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-build-isolation",
        "--no-deps",
        "--no-index",
        "--no-cache-dir",
        "--upgrade",
        "--target",
        str(site),
        str(src / "aot"),
    ]
    seconds, log = _run("aot", cmd, env={**_env(cuda), "LABKIT_OPS": ",".join(ops)}, cwd=src)
    libraries = {p.name[1:].split(".")[0]: p for p in sorted((site / "labkit_aot").glob("_*.so"))}
    return Built(
        "aot", cuda, seconds, libraries, {"LABKIT_PREBUILT": "labkit_aot", "PYTHONPATH": str(site)}, log, src=src
    )


# -- CMake ------------------------------------------------------------------------------------------------------------


def _program(name):
    """A build program on PATH or beside this Python (pip's cmake and ninja packages put them there)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if not found:
        raise FileNotFoundError(f"{name} not found (install it, or `pip install {name}`)")
    return found


def build_cmake(src, ops, cuda, build_dir=None):
    """cmake configure + build of src/cmake into build_dir (default src/cmake-build). Timed: both commands."""
    build_dir = Path(build_dir or src / "cmake-build")
    cxx = safe_cxx()[0] or "c++"
    cxx = shutil.which(cxx) or cxx
    configure = [
        _program("cmake"),
        "-S",
        str(src / "cmake"),
        "-B",
        str(build_dir),
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        f"-DLABKIT_OPS={';'.join(ops)}",
        f"-DLABKIT_CUDA={'ON' if cuda else 'OFF'}",
        f"-DCMAKE_CXX_COMPILER={cxx}",
    ]
    if not precompiled_header.enabled():  # LABKIT_PCH=0: no precompiled header in any build way
        configure.append("-DLABKIT_PCH=OFF")
    try:
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_program('ninja')}"]
    except FileNotFoundError:
        pass  # CMake's default generator (make) works too
    for op in ops:
        cxx_flags, cuda_flags = op_flags(src / "kernels", op)
        configure += [
            f"-DLABKIT_FLAGS_{op}_CXX={';'.join(cxx_flags)}",
            f"-DLABKIT_FLAGS_{op}_CUDA={';'.join(cuda_flags)}",
        ]
    if cuda:
        home = cpp_extension().CUDA_HOME
        configure += [
            f"-DCMAKE_CUDA_COMPILER={home}/bin/nvcc",
            f"-DCUDA_TOOLKIT_ROOT_DIR={home}",
            f"-DCMAKE_CUDA_HOST_COMPILER={cxx}",
        ]
    jobs = ["-j", os.environ["MAX_JOBS"]] if os.environ.get("MAX_JOBS", "").isdigit() else []
    # the compilers CMake finds by itself (CXX, CUDAHOSTCXX, nvcc's default host compiler) must be the safe one too:
    # CMake takes nvcc's implicit link libraries from a probe with its host compiler
    env = {**_env(cuda), "CXX": cxx, **({"CUDAHOSTCXX": cxx} if cuda else {})}
    t1, log1 = _run("cmake", configure, env=env)
    t2, log2 = _run("cmake", [_program("cmake"), "--build", str(build_dir), *jobs], env=env)
    libraries = {p.name[len("liblabkit_") :].split(".")[0]: p for p in sorted(build_dir.glob("liblabkit_*.so"))}
    return Built("cmake", cuda, t1 + t2, libraries, {"LABKIT_PREBUILT": str(build_dir)}, log1 + log2, src=src)


def rebuild_cmake(built, op, cuda_file=None):
    """cmake --build after a one-line kernel edit (of the .cu in a CUDA build, else the CPU kernel; cuda_file=False:
    the CPU kernel anyway): ninja recompiles that file and relinks its library. Returns the seconds."""
    src = built.src
    touch_kernel(src / "kernels", op, built.cuda if cuda_file is None else cuda_file)
    jobs = ["-j", os.environ["MAX_JOBS"]] if os.environ.get("MAX_JOBS", "").isdigit() else []
    build_dir = Path(built.env["LABKIT_PREBUILT"])
    seconds, _ = _run("cmake", [_program("cmake"), "--build", str(build_dir), *jobs], env=_env(built.cuda))
    return seconds


if __name__ == "__main__":
    # `make cmake`: the ops built with CMake into .build/cmake
    if sys.argv[1:] == ["cmake"]:
        cuda = cuda_build_wanted()
        built = build_cmake(ROOT, DEFAULT_OPS, cuda, build_dir=build_root() / "cmake")
        print(f"built {', '.join(DEFAULT_OPS)} for {'CUDA and CPU' if cuda else 'CPU'} in {built.seconds:.1f} s:")
        for so in built.libraries.values():
            print(f"  {so}")
        print(
            f"load them: from building.prebuilt import Prebuilt; "
            f"ops = Prebuilt.from_cmake({str(built.env['LABKIT_PREBUILT'])!r}, 'kernels')"
        )
    else:
        print("usage: python -m building.builds cmake", file=sys.stderr)
        sys.exit(2)
