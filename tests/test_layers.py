"""The kit's layers, as the README draws them: imports run one way.

    kit/ (the lessons' tools), bench/, scripts/  ->  loader.py  ->  building/ (what the loader stands on)
    kernels/<op>/op.py and exercises/<exercise>/op.py import torch alone
    a lesson's own module (kit/debugging.py, kit/record_*.py) is imported by that lesson alone: a tool two lessons
    need has a module of its own (kit/resources.py, kit/timing.py, kit/results.py)
    hub/ (a class's JupyterHub) imports none of the kit: the hub's process never loads torch or builds an op, and a
    student's code runs only in their own server (grading, in child processes of `python -m kit.grade`)

Read from the sources (ast), so a new import that runs the wrong way fails here, whoever adds it."""

import ast
import json

import pytest
from conftest import ROOT


def _source(path):
    """A file's Python: a notebook's code cells (without IPython's ! and % lines), or the file itself."""
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n".join(
        ln
        for c in cells
        if c["cell_type"] == "code"
        for ln in "".join(c["source"]).splitlines()
        if not ln.lstrip().startswith(("!", "%"))
    )


def kit_modules(path):
    """The kit/ modules a file imports: {"timing", "debugging", ...}."""
    names = set()
    for node in ast.walk(ast.parse(_source(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[1] for a in node.names if a.name.startswith("kit.")}
        elif isinstance(node, ast.ImportFrom) and node.module == "kit":
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kit."):
            names.add(node.module.split(".")[1])
    return names


def imported(path):
    """The top-level names of the modules a file imports (at any depth of the file: inside functions too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "building").glob("*.py")), ids=lambda p: p.name)
def test_building_imports_neither_the_loader_nor_the_lessons_tools(path):
    assert not imported(path) & {"loader", "kit"}, f"{path.name} imports upward: {imported(path) & {'loader', 'kit'}}"


def test_the_loader_imports_building_only():
    assert "building" in imported(ROOT / "loader.py")
    assert "kit" not in imported(ROOT / "loader.py")


@pytest.mark.parametrize(
    "path",
    sorted([*(ROOT / "kernels").glob("*/op.py"), *(ROOT / "exercises").glob("*/op.py")]),
    ids=lambda p: p.parent.name,
)
def test_an_ops_python_face_imports_torch_alone(path):
    assert imported(path) <= {"torch", "math", "functools"}, f"{path} imports {imported(path)}"


@pytest.mark.parametrize("path", sorted((ROOT / "hub").glob("*.py")), ids=lambda p: p.name)
def test_the_hub_imports_none_of_the_kit(path):
    kit = {"torch", "loader", "building", "kit"}
    assert not imported(path) & kit, f"hub/{path.name} imports {imported(path) & kit}"


@pytest.mark.parametrize(
    "path",
    sorted([ROOT / "loader.py", *(ROOT / "building").glob("*.py"), *(ROOT / "kit").rglob("*.py")]),
    ids=lambda p: p.name,
)
def test_nothing_of_the_kit_imports_the_hub(path):
    assert "hub" not in imported(path), f"{path.name} imports hub/"


# a lesson's own module, and the files of that lesson that may import it (its notebook, its recorder, its tests)
LESSON_MODULES = {
    "debugging": {"05_debugging.ipynb", "record_debug.py", "test_debugging.py"},
    "record_debug": {"05_debugging.ipynb", "test_debugging.py"},
    "record_timing": {"04_timing.ipynb", "test_timing.py"},
}


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for pattern in ("*.py", "*/*.py", "*/*/*.py", "notebooks/*.ipynb")
        for p in ROOT.glob(pattern)
        if ".venv" not in p.parts and "results" not in p.parts
    ),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_a_lessons_module_is_imported_by_that_lesson_alone(path):
    wrong = {m for m in kit_modules(path) & set(LESSON_MODULES) if path.name not in LESSON_MODULES[m]}
    assert not wrong, f"{path.relative_to(ROOT)} imports kit.{', kit.'.join(sorted(wrong))}, another lesson's module"
