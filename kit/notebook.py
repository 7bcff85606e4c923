"""Small helpers the notebooks share: show a function from a kernel file, edit a scratch copy of the kit,
and say plainly when a cell needs a GPU this machine lacks."""

import atexit
import re
import shutil
import tempfile
from pathlib import Path

import torch

import loader
from building.builds import touch  # noqa: F401  (edit() below, and tests: a file edit the clock sees)

ROOT = loader.ROOT
GPU = torch.cuda.is_available()


def gpu_name():
    return torch.cuda.get_device_name() if GPU else None


def needs_gpu(what):
    """True if the cell can run here; otherwise print one plain line saying what was skipped and why."""
    if GPU:
        return True
    print(
        f"[skipped: needs a CUDA GPU] {what}. This machine has none (torch.cuda.is_available() is False), "
        f"so this cell did nothing; everything else still runs on the CPU."
    )
    return False


def source_of(path, symbol):
    """The text of `symbol`'s definition in a C++/CUDA file: its comment lines, signature and braced body."""
    lines = (ROOT / path).read_text().splitlines()
    pattern = re.compile(rf"\b{re.escape(symbol)}\b\s*(\(|<|\{{|$)")
    for i, line in enumerate(lines):
        if pattern.search(line) and not line.rstrip().endswith(";") and not line.lstrip().startswith("//"):
            start = i
            while start > 0 and (lines[start - 1].lstrip().startswith("//") or lines[start - 1].startswith("template")):
                start -= 1
            depth, seen = 0, False
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                seen = seen or "{" in lines[j]
                if seen and depth <= 0:
                    return "\n".join(lines[start : j + 1])
    raise ValueError(f"{symbol} not found in {path}")


def show(path, *symbols):
    """Display definitions from a kernel file, with the file's name and syntax colours where Jupyter can."""
    text = f"// {path}\n" + "\n\n".join(source_of(path, s) for s in symbols)
    try:
        from IPython.display import Code, display

        display(Code(text, language="cpp"))
    except ImportError:
        print(text)


def scratch_kit(*op_names):
    """A copy of kernels/ (only these ops, plus common/) in a temporary folder, with an Ops of its own.

    Notebook cells that edit kernels programmatically edit this copy, so a run that stops half way never
    leaves the real kernels/ changed. The folder is removed when the process ends. Returns (ops, kernels_folder)."""
    tmp = Path(tempfile.mkdtemp(prefix="labkit-scratch-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a notebook kernel's, or a test's, copies and builds
    for name in ("common",) + op_names:
        shutil.copytree(
            ROOT / "kernels" / name,
            tmp / "kernels" / name,
            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
        )
    return loader.Ops(tmp / "kernels", build_dir=tmp / "build"), tmp / "kernels"


def scratch_variant(op, transform, changes=True):
    """scratch_kit(op) with kernels/<op>/<op>.cu rewritten as transform(its text): one variant of an op's kernels for
    an experiment (scripts/experiment_*_variants.py), built by the first call of the returned ops. `changes`: the
    transform must change the file (False for the unchanged base), else ValueError. Returns (ops, kernels_folder)."""
    lab, kernels = scratch_kit(op)
    cu = kernels / op / f"{op}.cu"
    src = cu.read_text()
    new = transform(src)
    if changes and new == src:
        raise ValueError(f"the variant of {cu.name} changed nothing")
    cu.write_text(new)
    return lab, kernels


def edit(path, old, new):
    """Replace `old` by `new` in a file, as a student would in the editor (and make sure the mtime moves)."""
    p = Path(path)
    text = p.read_text()
    if old not in text:
        raise ValueError(f"{old!r} not found in {p}")
    p.write_text(text.replace(old, new, 1))
    touch(p)
