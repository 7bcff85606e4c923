"""Strip outputs, execution counts and run metadata from notebooks: `python -m kit.nbstrip notebooks/*.ipynb`.

Notebooks are committed without outputs (timings and paths are machine noise in a diff); the tests fail on one that
is not stripped. `--check` only reports."""

import sys

import nbformat

KEEP_METADATA = {"kernelspec", "language_info"}


def strip(nb):
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
            cell.outputs, cell.execution_count, changed = [], None, True
        if cell.metadata:
            cell.metadata, changed = {}, True
    for key in set(nb.metadata) - KEEP_METADATA:
        del nb.metadata[key]
        changed = True
    return changed


def main(paths):
    check = "--check" in paths
    dirty = []
    for path in (p for p in paths if p != "--check"):
        nb = nbformat.read(path, as_version=4)
        if strip(nb):
            dirty.append(path)
            if not check:
                nbformat.write(nb, path)
    for path in dirty:
        print(("not stripped: " if check else "stripped: ") + path)
    return 1 if (check and dirty) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
