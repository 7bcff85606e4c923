"""Compile and load errors, short: file, line, the compiler's first error and the offending source line.

cpp_extension.load raises "Error building extension ..." followed by the whole ninja log: every compiler
command line (hundreds of -I flags) and every diagnostic. A student needs the first error and where it is;
the full log is kept in the build folder for the rest.
"""

import re
import shutil
import subprocess
from pathlib import Path

# g++/clang: path:line:col: error: msg     nvcc: path(line): error: msg
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.*)$")
_LINK = re.compile(r"(undefined reference to .*|ld(?:\.\w+)?: .*error.*|collect2: error: .*)")


class CompileError(RuntimeError):
    """An op failed to compile. Attributes: op, file, line, message, log (path of the full output)."""

    def __init__(self, op, file, line, message, source_line, log):
        self.op, self.file, self.line, self.message, self.source_line, self.log = (
            op,
            file,
            line,
            message,
            source_line,
            log,
        )
        where = f"{Path(file).name}:{line}" if file else "the build"
        text = f"{op} failed to compile: {where}: error: {message}"
        if source_line is not None:
            text += f"\n    {line:>4} | {source_line.rstrip()}"
        hint = _missing_header_hint(file, message)
        if hint:
            text += f"\n{hint}"
        text += f"\n(full compiler output: {log})"
        super().__init__(text)

    @classmethod
    def from_build_output(cls, op, output, build_dir):
        log = Path(build_dir) / "last_build_error.log"
        log.write_text(output)
        for raw in output.splitlines():
            ln = raw.strip()
            m = _GCC.match(ln) or _NVCC.match(ln)
            if m:
                # a path relative to the build folder, where the compilers run: through a compiler cache the kit's
                # files are named relative (building/compiler_cache.py, CCACHE_BASEDIR)
                path, line = str(Path(build_dir, m["file"]).resolve()), int(m["line"])
                return cls(op, path, line, m["msg"].strip(), _source_line(path, line), log)
        m = next((m for m in map(_LINK.search, output.splitlines()) if m), None)
        msg = _demangle(m.group(1)) if m else _last_meaningful_line(output)
        return cls(op, None, None, msg, None, log)

    def again(self):
        """The same error, raised afresh on the next call until a file of the op changes."""
        return CompileError(self.op, self.file, self.line, self.message, self.source_line, self.log)

    def _render_traceback_(self):
        return _short(self)


class LoadError(RuntimeError):
    """An op compiled and linked, but its library failed to load (usually a declared, never defined function)."""

    def __init__(self, op, message):
        self.op, self.message = op, message
        super().__init__(f"{op} compiled but failed to load: {message}")

    @classmethod
    def from_os_error(cls, op, err):
        return cls(op, _demangle(str(err)))

    def again(self):
        return LoadError(self.op, self.message)

    def _render_traceback_(self):
        return _short(self)


def _short(error):
    """What IPython (a notebook cell) shows for the loader's errors: the message (file, line, compiler message, source
    line) without the frames of loader.py, which say nothing about the student's code. IPython calls
    `_render_traceback_` instead of printing the traceback; plain Python still prints it whole, for debugging."""
    return [f"{type(error).__name__}: {error}"]


# What a kernel file must include itself: nvcc gets -D_GLIBCXX_BITS_SPECFUN_H from the loader (loader.py, flags()),
# which leaves out the part of <cmath> that brings these along elsewhere (<algorithm>'s core and <limits>)
_HEADER_OF = {"min": "<algorithm>", "max": "<algorithm>", "minmax": "<algorithm>", "numeric_limits": "<limits>"}
_NO_STD_MEMBER = re.compile(r'namespace "std" has no member "(?P<name>\w+)"')


def _missing_header_hint(file, message):
    """For a .cu file's `std::min` (or max, numeric_limits) without its header: which header to include, and why
    the same code may compile elsewhere."""
    m = _NO_STD_MEMBER.search(message)
    if not (m and file and Path(file).suffix in (".cu", ".cuh") and m["name"] in _HEADER_OF):
        return None
    return (
        f"hint: #include {_HEADER_OF[m['name']]} in the kernel file (std::{m['name']} is declared there; the kit "
        "compiles .cu files without the C++17 special math functions of <cmath>, which would bring it along: "
        "a third faster to build)"
    )


def _source_line(path, line):
    try:
        return Path(path).read_text(errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return None


def _last_meaningful_line(output):
    """No compiler diagnostic found: the first line after ninja's FAILED that is not a command line."""
    lines = output.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("FAILED:"):
            for other in lines[i + 1 :]:
                if other.strip() and " -o " not in other and not other.startswith(("FAILED:", "[", "ninja:")):
                    return other.strip()
    rest = [ln for ln in lines if ln.strip() and not ln.startswith("[")]
    return rest[-1].strip() if rest else output.strip()[:300]


def _demangle(text):
    """undefined symbol: _Z8add2_cpu4DTypePvPKvS2_l  ->  undefined symbol: add2_cpu(DType, void*, ...)"""
    if not shutil.which("c++filt"):
        return text

    def one(m):
        out = subprocess.run(["c++filt", m.group(0)], capture_output=True, text=True)
        return out.stdout.strip() or m.group(0)

    return re.sub(r"_Z\w+", one, text)
