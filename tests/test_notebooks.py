"""Every notebook runs top to bottom (on a machine without a GPU too), and is committed with outputs stripped."""
import os
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_dir = {"PYTHONPATH": str(ROOT)}
    os.environ.update(env_dir)
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails
    out_dir = os.environ.get("LABKIT_EXECUTED_NOTEBOOKS")
    if out_dir:  # keep the executed copy (the GPU run records them)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(out_dir) / path.name)
