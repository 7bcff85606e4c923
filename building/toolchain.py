"""Is the host C++ compiler safe for a torch extension, and which linker is fastest? Used by the loader and the doctor.

A C++ exception thrown in an extension (every failed TORCH_CHECK) is caught by libtorch. That works only if the
extension uses the process's shared C++ runtime (libstdc++.so.6). A compiler set up to link its own runtime
(seen on the GPU machine: CXX=/opt/gcc/bin/g++, a wrapper whose -B paths hold only a static libstdc++) builds
libraries that load and compute fine, then crash the whole process on the first argument check.
"""

import functools
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

_PROBE = '#include <stdexcept>\nvoid labkit_probe(int x) { if (x) throw std::runtime_error("x"); }\n'


def elf_needed(path):
    """The DT_NEEDED entries (shared libraries a library asks for) of a 64-bit little-endian ELF file."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link]
        needed = []
        for pos in range(offset, offset + size, entsize or 16):
            tag, val = struct.unpack_from("<qQ", data, pos)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                start = strtab[4] + val
                needed.append(data[start : data.index(b"\0", start)].decode())
        return needed
    return []


@functools.cache
def links_shared_cxx_runtime(cxx):
    """True if `cxx` builds shared libraries that use the shared libstdc++ (or libc++), None if it cannot tell."""
    exe = shutil.which(cxx.split()[0]) if cxx else None
    if not exe:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = Path(tmp) / "probe.cpp", Path(tmp) / "probe.so"
        src.write_text(_PROBE)
        r = subprocess.run(cxx.split() + ["-shared", "-fPIC", str(src), "-o", str(lib)], capture_output=True)
        if r.returncode or not lib.exists():
            return None
        needed = elf_needed(lib)
    if needed is None:
        return None
    return any(n.startswith(("libstdc++", "libc++")) for n in needed)


def safe_cxx():
    """The C++ compiler builds should use: $CXX if it is safe, else the first safe of c++ / g++ / clang++.
    Returns (compiler or None, note explaining a replacement or None)."""
    cxx = os.environ.get("CXX")
    if not cxx or links_shared_cxx_runtime(cxx) is not False:
        return cxx, None
    for other in ("c++", "g++", "clang++"):
        if links_shared_cxx_runtime(other):
            return other, (
                f"CXX={cxx} links a private static C++ runtime, so the first C++ exception in an op "
                f"(any failed argument check) would crash Python; building with {other} instead"
            )
    return None, f"CXX={cxx} links a private static C++ runtime and no other C++ compiler was found"


@functools.cache
def fast_linker(cxx):
    """The -fuse-ld= flag of the fastest linker `cxx` can link a shared library with (mold, lld, then gold), or
    None for the default. Every .cu or .cpp edit relinks the op against libtorch's large symbol tables, and mold and
    lld do that several times faster than GNU ld, gold about twice as fast (scripts/experiment_edit_time.py measures
    them: results/*/edit_time.json)."""
    exe = shutil.which((cxx or "c++").split()[0])
    if not exe or os.environ.get("LABKIT_LINKER") == "default":
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(_PROBE)
        for ld in ("mold", "lld", "gold"):
            if not (shutil.which(f"ld.{ld}") or shutil.which(ld)):
                continue
            flag = f"-fuse-ld={ld}"
            r = subprocess.run(
                [
                    exe,
                    *(cxx or "c++").split()[1:],
                    "-shared",
                    "-fPIC",
                    flag,
                    str(src),
                    "-o",
                    str(Path(tmp) / f"{ld}.so"),
                ],
                capture_output=True,
            )
            if r.returncode == 0:
                return flag
    return None
