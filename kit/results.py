"""Where measurements go, and how a lesson reads them back: results/<date>-<machine>/, one folder per machine and day
(LABKIT_RESULTS_DIR moves results/). Every recorder (make bench, kit.record_timing, kit.record_debug, kit.devices,
scripts/measure_loader.py) and scripts/gpu_session.sh name their folder here, so one run's files land together; every
lesson that shows a GPU's results on a machine without one reads them with recorded()."""

import datetime
import json
import os
import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def root():
    return Path(os.environ.get("LABKIT_RESULTS_DIR", ROOT / "results"))


def slug(name):
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def machine_name():
    """This process's current GPU by name, or 'cpu' without one."""
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def machine_dir(name=None, suffix=""):
    """results/<today>-<machine><suffix>, for the named device (default: machine_name())."""
    return root() / f"{datetime.date.today().isoformat()}-{slug(name or machine_name())}{suffix}"


def newest(filename, keep=lambda data: True):
    """The newest root()/*/<filename> (by the date it records, then by folder name) whose data `keep` accepts:
    (data, path), or (None, None). What the notebooks show on machines that cannot measure it themselves."""
    found = []
    for path in root().glob(f"*/{filename}"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if keep(data):
            found.append(((data.get("date", ""), path.parent.name), data, path))
    if not found:
        return None, None
    _, data, path = max(found, key=lambda f: f[0])
    return data, path


def recorded(filename, keep=lambda data: True):
    """The newest recording of `filename` in results/ that `keep` accepts, as its dict with "file" added (its path as
    shown()), or None: what a lesson shows, labelled with machine and date, where it cannot measure it itself."""
    data, path = newest(filename, keep)
    return None if data is None else data | {"file": str(shown(path))}


def on_gpu(data):
    """keep= for recordings made on a GPU (their "kind" is "cuda"), not the CPU's runs of the same recorder."""
    return data.get("kind") == "cuda"


def shown(path):
    """A results path as the notebooks print it: from the repository's root where it lies inside it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


if __name__ == "__main__":
    print(machine_dir())
