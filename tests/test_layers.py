"""The kit's layers, as the README draws them: imports run one way.

    kit/ (the lessons' tools), bench/, scripts/  ->  loader.py  ->  building/ (what the loader stands on)
    kernels/<op>/op.py and exercises/<exercise>/op.py import torch alone
    hub/ (a class's JupyterHub) imports none of the kit: the hub's process never loads torch or builds an op, and a
    student's code runs only in their own server (grading, in child processes of `python -m kit.grade`)

Read from the sources (ast), so a new import that runs the wrong way fails here, whoever adds it."""
import ast

import pytest
from conftest import ROOT


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


@pytest.mark.parametrize("path", sorted([*(ROOT / "kernels").glob("*/op.py"), *(ROOT / "exercises").glob("*/op.py")]),
                         ids=lambda p: p.parent.name)
def test_an_ops_python_face_imports_torch_alone(path):
    assert imported(path) <= {"torch", "math", "functools"}, f"{path} imports {imported(path)}"


@pytest.mark.parametrize("path", sorted((ROOT / "hub").glob("*.py")), ids=lambda p: p.name)
def test_the_hub_imports_none_of_the_kit(path):
    kit = {"torch", "loader", "building", "kit"}
    assert not imported(path) & kit, f"hub/{path.name} imports {imported(path) & kit}"


@pytest.mark.parametrize("path", sorted([ROOT / "loader.py", *(ROOT / "building").glob("*.py"),
                                         *(ROOT / "kit").glob("*.py")]), ids=lambda p: p.name)
def test_nothing_of_the_kit_imports_the_hub(path):
    assert "hub" not in imported(path), f"{path.name} imports hub/"
