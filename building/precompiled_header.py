"""The bindings' precompiled header: kernels/common/binding.h and autograd.h, with the torch headers they include,
compiled once into a binding.h.gch that every binding's compile loads instead of parsing them again. Measured on the
2-core machine: add2's binding compiles in ~8 s with it, ~16 s without (parsing torch's headers is ~10 s of a
binding's compile; loading the ~500 MB .gch is ~2.5 s); the .gch itself takes ~25 s of one core, once.

How GCC finds it: for `#include "binding.h"` as a file's first include, GCC looks in each include folder for
binding.h.gch before binding.h, and uses it if it was compiled by the same compiler with the same flags (it checks,
and otherwise reads the folder's binding.h as a plain header). The loader puts this module's folder first on the
include path. The folder holds a binding.h that includes the kit's binding.h (#include_next) and autograd.h, so a
build is the same with the .gch, without it, or while it is still being compiled; and, once compiled, the .gch. The
build's command line is the same in all three cases, so ninja and ccache see no change when the .gch appears.

One folder per key: the compiler, the build's flags, torch's headers and the content of the kit's headers it holds
(binding.h, autograd.h, kit.h). An edit of one of them makes another key, and so never meets a header compiled from
the old text; it also changes the build's command line, so the op's files all compile again (as an edit of kit.h
would make them anyway). An edit of another header of common/ keeps the key. The headers of common/ carry include
guards rather than #pragma once: a .gch compiled from one copy of the kit serves every copy with the same content,
and a second include of kit.h from another copy's path must still be skipped.

When: the first build with a key writes the folder and records the flags of its binding compile (from the build.ninja
that cpp_extension wrote); the second build with that key starts compiling the .gch, in the background and at a low
priority, and the builds after it use it. A key that only one build uses (a scratch copy with an edited header, a
compile check) costs nothing. A CUDA build where no GPU is visible goes without: it is a compile check (LABKIT_CUDA=1,
notebook 05's resource counts), made a few times at most, and its header would cost more than it saves (the test
suite on the 2-core machine compiled it, ~25 s of a core and 500 MB, for one or two bindings of ~8 s each). Only for
GCC (clang finds no .gch through #include), and only for ops with the kit's own flags (an op.py with CXX_FLAGS of its
own would need a header of its own). LABKIT_PCH=0 turns it off.

Where: $LABKIT_PCH_DIR where it is set (the test suite's builds, whatever compiler cache each names, share one);
else beside the class's compiler cache ($LABKIT_CACHE_DIR/pch: `make warm` compiles it once for everyone, and a
student who cannot write there uses it, or goes without); else in the build folder (build_root()/pch). A build
reaches it through a link beside its own build folder (folder()).

The ahead-of-time builds of every op: aot/setup.py keeps a header of its own in its build folder (own_folder), compiled
after the first op and before the next (compile_now); cmake/CMakeLists.txt uses CMake's precompiled headers.
"""

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from building.environment import build_root

HEADER = "binding.h"
STALE_SECONDS = 15 * 60  # a compile marked as running for longer than this was killed: start again

STUB = """// binding.h as the bindings' first include finds it (building/precompiled_header.py): the kit's binding.h and
// autograd.h. binding.h.gch beside this file, where it is, holds both compiled, with the torch headers they include.
#include_next "binding.h"
#include "autograd.h"
"""


def enabled():
    return os.environ.get("LABKIT_PCH", "1") != "0"


def read_only():
    """A class's student (LABKIT_CACHE_READONLY=1, set by the hub): uses what `make warm` compiled, writes nothing."""
    return bool(os.environ.get("LABKIT_CACHE_DIR")) and os.environ.get("LABKIT_CACHE_READONLY") == "1"


def root():
    """The folder of the headers' folders: $LABKIT_PCH_DIR, else beside the compiler cache where there is one, else in
    the build folder."""
    named = os.environ.get("LABKIT_PCH_DIR")
    if named:
        return Path(named).expanduser()
    cache = os.environ.get("LABKIT_CACHE_DIR")
    return Path(cache).expanduser() / "pch" if cache else build_root() / "pch"


@functools.cache
def _is_gcc(cxx):
    exe = shutil.which(cxx or "c++")
    if not exe:
        return None
    try:
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if "Free Software Foundation" in text and "clang" not in text.lower() else None


def folder(common, cxx, flags, cuda, builds=None):
    """The include folder of the precompiled header for a binding compiled by `cxx` with the loader's `flags` (cuda:
    a CUDA build, whose bindings see CUDA's headers too), against the headers of `common`; created if it can be.
    None where the header does not apply (not GCC, LABKIT_PCH=0, a folder that cannot be written or read).

    builds: the folder the build folders are in. The include folder is then a link there (builds/pch/<key>) to the
    shared one: ccache hashes the paths inside its base folder relative to the build folder, and a path into a
    folder outside the kit would differ between copies of the kit laid out alike, and miss."""
    if cuda and not _gpu_visible():  # a compile check (above)
        return None
    shared = _shared_folder(common, cxx, flags, cuda)
    if shared is None or builds is None or Path(builds) / "pch" == root():
        return shared
    link = Path(builds) / "pch" / shared.name
    if link.resolve() != shared.resolve():
        try:
            link.parent.mkdir(parents=True, exist_ok=True)
            tmp = link.parent / f".{shared.name}.{os.getpid()}.tmp"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(shared.resolve(), target_is_directory=True)
            tmp.replace(link)
        except OSError:
            return shared
    return link


def _gpu_visible():
    import torch

    return torch.cuda.is_available()


def own_folder(under, common, cxx, flags, cuda):
    """The include folder of a build that keeps its precompiled header to itself, in the folder `under` (aot/setup.py:
    the package's build folder, where it compiles the .gch itself, compile_now); keyed as the shared ones are. None
    where the header does not apply (not GCC, LABKIT_PCH=0, a folder that cannot be written)."""
    return _shared_folder(common, cxx, flags, cuda, under=Path(under))


def _shared_folder(common, cxx, flags, cuda, under=None):
    exe = _is_gcc(cxx) if enabled() else None
    if exe is None:
        return None
    import torch

    key = hashlib.sha256()
    for part in (exe, os.stat(exe).st_mtime_ns, sys.version, cuda, flags, torch.__version__, torch.__file__):
        key.update(repr(part).encode() + b"\0")
    for p in kit_headers(common):
        key.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    path = (under or root()) / key.hexdigest()[:16]
    stub = path / HEADER
    if stub.is_file():
        return path
    if read_only() and under is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
        tmp = path / f".{HEADER}.{os.getpid()}.tmp"
        tmp.write_text(STUB)
        tmp.replace(stub)  # atomic: a concurrent build reads all of it or finds none
    except OSError:  # a class's read-only cache without this key: build without it
        return None
    return path


def kit_headers(common):
    """The headers of common/ that the .gch holds: binding.h, autograd.h and what they include from common/, in
    order. An edit of another (cpu_half.h, which kernel files include) keeps the key, so it recompiles only the files
    that include it."""
    found, todo = [], ["binding.h", "autograd.h"]
    while todo:
        p = Path(common) / todo.pop(0)
        if p in found or not p.is_file():
            continue
        found.append(p)
        todo += re.findall(r'^\s*#\s*include\s*"([^"]+)"', p.read_text(), re.M)
    return found


def after_build(path, build_ninja, common, cxx):
    """Called after a build that had `path` on its include path: the first build records its binding flags, the
    second starts compiling the .gch from them. Never raises: the header only makes builds faster."""
    try:
        _after_build(Path(path), Path(build_ninja), Path(common), cxx)
    except OSError:
        pass


def _after_build(path, build_ninja, common, cxx):
    gch, flags_file = path / (HEADER + ".gch"), path / "flags.json"
    if gch.exists() or read_only():
        return
    if not flags_file.exists():
        flags = _binding_flags(build_ninja)
        if flags:
            tmp = path / f".flags.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(flags))
            tmp.replace(flags_file)
        return
    marker = path / "compiling"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o664)
    except FileExistsError:
        if time.time() - marker.stat().st_mtime < STALE_SECONDS:
            return  # another build is compiling it
        marker.unlink(missing_ok=True)  # a compile that was killed: the next build starts one
        return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    start(path, json.loads(flags_file.read_text()), common, _is_gcc(cxx))


def _binding_flags(build_ninja):
    """The flags cpp_extension compiles a .cpp file of the build with (its build.ninja's cflags and post_cflags),
    less the extension's name, which the headers do not use."""
    values = {}
    for line in build_ninja.read_text().splitlines():
        name, eq, value = line.partition(" = ")
        if eq and name in ("cflags", "post_cflags"):
            values[name] = shlex.split(value)
    flags = values.get("cflags", []) + values.get("post_cflags", [])
    return [f for f in flags if not f.startswith("-DTORCH_EXTENSION_NAME=")]


def _command(path, flags, common, exe):
    """The compile of the .gch into a temporary file: (command, the .gch, the temporary file). The source names the
    kit's headers by absolute path (the folder's binding.h would include itself as a main file)."""
    source = path / "source.h"
    source.write_text(f'#include "{Path(common) / "binding.h"}"\n#include "{Path(common) / "autograd.h"}"\n')
    gch, tmp = path / (HEADER + ".gch"), path / f".{HEADER}.gch.{os.getpid()}.tmp"
    return [exe, *flags, "-x", "c++-header", str(source), "-o", str(tmp)], gch, tmp


def start(path, flags, common, exe):
    """Compile the .gch in the background, niced, into a temporary file renamed into place when it is whole; the
    marker goes either way."""
    command, gch, tmp = _command(path, flags, common, exe)
    compile_ = shlex.join(command)
    script = f"nice -n 10 {compile_} && mv {shlex.quote(str(tmp))} {shlex.quote(str(gch))}; "
    script += f"rm -f {shlex.quote(str(tmp))} {shlex.quote(str(path / 'compiling'))}"
    with open(path / "compile.log", "w") as log:
        subprocess.Popen(["sh", "-c", script], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def compile_now(path, build_ninja, common, cxx):
    """Compile the .gch in this process's time, from the binding flags of the build that wrote `build_ninja`, for the
    builds that come after (aot/setup.py, between one op and the next). Returns whether it was made; where not, the
    compiler's output is in the folder's compile.log and the builds read the headers as they are."""
    path = Path(path)
    command, gch, tmp = _command(path, _binding_flags(Path(build_ninja)), common, _is_gcc(cxx))
    r = subprocess.run(command, capture_output=True, text=True)
    (path / "compile.log").write_text(r.stdout + r.stderr)
    if r.returncode == 0:
        tmp.replace(gch)
        return True
    tmp.unlink(missing_ok=True)
    return False


def wait(timeout=300):
    """Wait until no precompiled header is being compiled under root() (make warm, before it reports done)."""
    deadline = time.time() + timeout
    while time.time() < deadline and any(root().glob("*/compiling")):
        time.sleep(0.5)


def state():
    """For make doctor: the compiled headers, and any being compiled."""
    folders = [p for p in root().glob("*") if p.is_dir()]
    ready = [p for p in folders if (p / (HEADER + ".gch")).exists()]
    size = sum((p / (HEADER + ".gch")).stat().st_size for p in ready)
    return {
        "folder": str(root()),
        "compiled": len(ready),
        "compiling": sum((p / "compiling").exists() for p in folders),
        "size_mb": size / 2**20,
    }
