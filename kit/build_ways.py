"""The same kernels/<op>/ files built three ways, and timed: JIT (the loader, at the first call), ahead of time as a
package pip installs, and with CMake against libtorch (building/builds.py has those two). For the table of
05_debugging.ipynb and for tests/test_builds.py.

Every build runs in child processes, on a fresh copy of the kit: this process may hold the JIT loader's ops already.
"""

import shutil
import sys
import tempfile
from pathlib import Path

from building.builds import (
    DEFAULT_OPS,
    ROOT,
    BuildFailed,
    Built,
    _env,
    build_aot,
    build_cmake,
    checkout,
    rebuild_cmake,
    touch_kernel,
)
from building.environment import cuda_build_wanted
from building.toolchain import elf_needed
from kit.devices import run_program

WAYS = ("jit", "aot", "cmake")


# -- JIT --------------------------------------------------------------------------------------------------------------


def build_jit(src, ops, cuda, edit=None):
    """The loader's build, timed inside one Python process (as a student meets it: the first call of a running kernel,
    then the call after an edit, with no restart). edit: the op whose kernel to edit, to time the rebuild."""
    r = run_program(
        "jit_build", src / "kernels", src / "jit-build", int(cuda), edit or "-", *ops, env=_env(cuda), timeout=1800
    )
    if r.result is None:
        raise BuildFailed("jit", r.stdout + r.stderr)
    return Built(
        "jit",
        cuda,
        r.result["cold"],
        {op: Path(p) for op, p in r.result["libraries"].items()},
        {},
        r.stdout,
        r.result["rebuild"],
        src,
    )


def build(way, src, ops=DEFAULT_OPS, cuda=False):
    """Build `ops` of the checkout `src` one way; returns a Built."""
    src = Path(src)
    if way == "jit":
        return build_jit(src, ops, cuda)
    if way == "aot":
        return build_aot(src, ops, cuda)
    if way == "cmake":
        return build_cmake(src, ops, cuda)
    raise ValueError(f"way must be one of {WAYS}, got {way!r}")


# -- the table --------------------------------------------------------------------------------------------------------

NEEDS = {
    "jit": "the sources; every user's machine needs a C++ compiler, ninja and torch's headers (nvcc for CUDA); "
    "compiles at the first call, for exactly that torch and those GPUs; an edit shows in the running Python",
    "aot": "a wheel (one per torch version, CUDA version, Python and platform: setup.py pins torch==); installs "
    "with no compiler; an edit means pip install again and a restart of Python",
    "cmake": "a plain shared library, for Python (torch.ops.load_library) or a C++ program linked with libtorch "
    "of the same version; no Python needed to build it; an edit means cmake --build and a restart",
}


def measure(cuda=None, op="add2", folder=None):
    """Build `op` each way from a fresh checkout, time the cold build and the rebuild after a one-line kernel edit,
    and describe what each produces. Returns one dict per way. Takes about a minute for add2 on 2 cores (CPU)."""
    cuda = cuda_build_wanted() if cuda is None else cuda
    folder = Path(folder or tempfile.mkdtemp(prefix="labkit-builds-"))
    rows = []
    for way in WAYS:
        src = checkout(folder / way, (op,))
        if way == "jit":
            built = build_jit(src, (op,), cuda, edit=op)
        else:
            built = build(way, src, (op,), cuda)
            if way == "aot":
                touch_kernel(src / "kernels", op, cuda)
                built.rebuild_seconds = build_aot(src, (op,), cuda).seconds
            else:
                built.rebuild_seconds = rebuild_cmake(built, op)
        so = built.libraries[op]
        torch_libs = [n for n in elf_needed(so) or [] if n.startswith(("libtorch", "libc10", "libcudart"))]
        rows.append(
            {
                "way": way,
                "cuda": cuda,
                "build_s": round(built.seconds, 1),
                "rebuild_s": round(built.rebuild_seconds, 2),
                "library": so.name,
                "library_kib": round(so.stat().st_size / 1024),
                "links": torch_libs,
                "needs": NEEDS[way],
            }
        )
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def table(rows):
    """The rows of measure() as a markdown table."""
    names = {
        "jit": "JIT: `loader` (`cpp_extension.load`)",
        "aot": "AOT: `pip install ./aot` (setuptools)",
        "cmake": "CMake against libtorch",
    }
    lines = [
        "| way | build, cold | rebuild after a one-line kernel edit | what you get | what it needs, where it runs |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {names[r['way']]} | {r['build_s']} s | {r['rebuild_s']} s | `{r['library']}`, "
            f"{r['library_kib']} KiB, linked to {', '.join(r['links'])} | {r['needs']} |"
        )
    return "\n".join(lines)


def show_table(rows):
    text = table(rows)
    try:
        from IPython.display import Markdown, display

        display(Markdown(text))
    except ImportError:
        print(text)


def excerpt(path, first, last):
    """The lines of a file from the first containing `first` to the next containing `last`, for showing in a notebook."""
    lines = (ROOT / path).read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if first in ln)
    end = next(i for i in range(start, len(lines)) if last in lines[i])
    return f"# {path}, lines {start + 1}-{end + 1}\n" + "\n".join(lines[start : end + 1])


if __name__ == "__main__":
    if sys.argv[1:] == ["table"]:  # python -m kit.build_ways table: the measurements, as a markdown table
        print(table(measure()))
    else:
        print("usage: python -m kit.build_ways table", file=sys.stderr)
        sys.exit(2)
