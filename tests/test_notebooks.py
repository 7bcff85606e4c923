"""Every notebook runs top to bottom (on a machine without a GPU too), and is committed with outputs stripped."""

import json
import os
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from kit.nbstrip import strip

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stripped(path):
    nb = nbformat.read(path, as_version=4)
    assert not strip(nb), f"{path.name} has outputs or run metadata: run `make strip` before committing"


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory):
    """A kernelspec that runs this very Python (whatever kernelspecs the machine has installed), with the kit
    importable. Returns its name; JUPYTER_PATH points at it for the duration of the tests."""
    spec_dir = tmp_path_factory.mktemp("jupyter") / "kernels" / "labkit-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "labkit tests",
                "language": "python",
                "env": {"PYTHONPATH": os.pathsep.join([str(ROOT)] + sys.path[1:])},
            }
        )
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(spec_dir.parent.parent), prepend=os.pathsep)
        yield "labkit-test"


# notebooks whose live GPU cells assert on measured speed closely (ELU's staged kernel within 5% of the plain one,
# four timers within 25% of each other, every rung of the Hopper ladder above the last, two of them 2% apart): on a GPU
# they run apart from a parallel run, as the timing tests do (scripts/gpu_session.sh), where other tests' kernels
# would skew them. 06_reductions runs with the others: it times its versions side by side, in turn, and its checks
# have margins of 10% and more (ours >= 0.9x torch.sum, versions that differ 1.3x and more).
TIMES_THE_GPU = {"02_elu.ipynb", "04_timing.ipynb", "07_matmul.ipynb"}
RUNS = [pytest.param(p, marks=[pytest.mark.exclusive_gpu] if p.name in TIMES_THE_GPU else []) for p in NOTEBOOKS]


@pytest.mark.parametrize("path", RUNS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_name):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    out_dir = os.environ.get("LABKIT_EXECUTED_NOTEBOOKS")
    hooks = {}
    if out_dir:  # each cell's start and end as it happens: a run stopped at its time limit says where it was
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        log = Path(out_dir) / f"{path.stem}.cells.log"
        log.write_text("")

        def note(event):
            def hook(cell, cell_index, **_):
                first = cell.source.splitlines()[0][:80] if cell.source else ""
                with open(log, "a") as f:
                    f.write(f"{time.strftime('%H:%M:%S')} {event} cell {cell_index}: {first}\n")

            return hook

        hooks = {"on_cell_execute": note("starts"), "on_cell_executed": note("ends")}
    client = NotebookClient(
        nb, timeout=900, kernel_name=kernel_name, resources={"metadata": {"path": str(path.parent)}}, **hooks
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails
    if out_dir:  # keep the executed copy (the GPU run records them)
        nbformat.write(nb, Path(out_dir) / path.name)
