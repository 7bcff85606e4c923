"""What a class's students get, and what stays the instructor's (hub/classroom.py, hub/singleuser.py): the hand-out
is the kit's committed files less solutions/, tests/ and hub/, whatever the instructor's working tree holds (solved
stubs, executed notebooks, grades, submissions, the roster); edits not committed are named; each student's home is
theirs alone."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from hub import classroom, singleuser

STUB = "// TODO (roughly 1 line)\n"
SOLVED = "if (i < n) c[i] = a[i] + b[i];\n"


def _git(kit, *args):
    subprocess.run(["git", "-C", str(kit), *args], check=True, capture_output=True)


def _notebook(outputs):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1)")
    if outputs:
        cell.outputs, cell.execution_count = [nbformat.v4.new_output("stream", text="1\n")], 1
    nb.cells.append(cell)
    return nbformat.writes(nb)


@pytest.fixture
def instructor_kit(tmp_path):
    """A small kit in git as it is committed, then the instructor's working tree after a class was graded."""
    kit = tmp_path / "kit"
    committed = {
        "exercises/ex1/ex1.h": STUB,
        "exercises/ex1/check.py": "NUMBER = 1\n",
        "kernels/add2/add2.cpp": "// add2\n",
        "notebooks/01.ipynb": _notebook(outputs=False),
        "solutions/ex1/ex1.h": SOLVED,
        "tests/test_ex1.py": SOLVED,
        "hub/singleuser.py": "",
        "README.md": "kit\n",
    }
    for path, text in committed.items():
        (kit / path).parent.mkdir(parents=True, exist_ok=True)
        (kit / path).write_text(text)
    _git(kit, "init", "-q")
    _git(kit, "add", ".")
    _git(kit, "-c", "user.name=i", "-c", "user.email=i@x", "commit", "-q", "-m", "kit")
    planted = {  # what grading, a roster and the instructor's own work leave in the working tree
        "exercises/ex1/ex1.h": SOLVED,
        "notebooks/01.ipynb": _notebook(outputs=True),
        "submissions/ada/exercises/ex1/ex1.h": SOLVED,
        "grades.json": json.dumps({"ada": [{"exercise": "ex1", "passed": True}]}),
        "grades.csv": "student_id,assignment\nada,ex1\n",
        "students.txt": "ada\nbo\n",
        ".hub/homes/ada/kit/exercises/ex1/ex1.h": SOLVED,
        "exercises/ex1/notes.txt": "the instructor's notes, never committed\n",
    }
    for path, text in planted.items():
        (kit / path).parent.mkdir(parents=True, exist_ok=True)
        (kit / path).write_text(text)
    return kit, committed


def _files(root):
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file())


def test_the_hand_out_is_the_committed_kit_without_answers_or_grades(instructor_kit, tmp_path):
    kit, committed = instructor_kit
    handout = classroom.make_handout(tmp_path / "handout", kit)
    expected = sorted(p for p in committed if p.split("/")[0] not in ("solutions", "tests", "hub"))
    assert _files(handout) == expected  # no submissions, grades, roster, homes, untracked notes
    assert (handout / "exercises/ex1/ex1.h").read_text() == STUB, "the instructor's solved stub was handed out"
    nb = nbformat.read(handout / "notebooks/01.ipynb", as_version=4)
    assert not nb.cells[0].outputs and nb.cells[0].execution_count is None
    # a student logging in after grading: their kit is the hand-out, with nobody's work or grade in it
    home = tmp_path / "bo"
    home.mkdir()
    mine = singleuser.hand_out(home, handout)
    assert _files(mine) == expected
    assert not any("ada" in f or "grade" in f for f in _files(home)), _files(home)


def test_the_hub_names_handed_out_files_that_are_not_committed(instructor_kit):
    kit, _ = instructor_kit
    assert classroom.changed_files(kit) == ["exercises/ex1/ex1.h", "notebooks/01.ipynb"]
    # and the files students will not get because git does not track them (.hub/ is ignored in the kit, not here)
    assert "exercises/ex1/notes.txt" in classroom.new_files(kit) and "students.txt" in classroom.new_files(kit)


def test_the_real_kit_hands_out_no_solutions_tests_or_hub(tmp_path):
    handout = classroom.make_handout(tmp_path / "handout", ROOT)
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True)
    expected = sorted(p for p in tracked.stdout.split() if p.split("/")[0] not in classroom.NOT_HANDED_OUT)
    assert _files(handout) == expected
    assert (handout / "exercises").is_dir() and (handout / "notebooks" / "01_add2.ipynb").is_file()


def test_the_class_folder_is_the_instructors_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_CLASS_DIR", str(tmp_path / "class"))
    d = classroom.class_dir()
    assert d == (tmp_path / "class").resolve() and (d.stat().st_mode & 0o777) == 0o700
    assert not d.is_relative_to(ROOT)
    monkeypatch.delenv("LABKIT_STUDENTS", raising=False)
    assert classroom.roster() is None
    (d / "students.txt").write_text("ada\n")
    assert classroom.roster() == d / "students.txt"


def _runs_as(python, uid):
    try:
        return subprocess.run([python, "-c", "pass"], user=uid, group=uid, extra_groups=[]).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(os.getuid() != 0, reason="needs root, to run as two different users (unix mode)")
def test_a_students_process_cannot_read_anothers_home():
    """Two students as two Unix accounts (uids of their own): each sets up their home as singleuser.py does; one's
    process then tries to read the other's kit."""
    base = Path(tempfile.mkdtemp(prefix="labkit-homes-"))
    try:
        base.chmod(0o755)
        handout = classroom.make_handout(base / "handout", ROOT)
        # the students' processes import hub/ (standard library only) from a copy they can read: the kit's own
        # checkout may sit where other accounts cannot (a home, or a mkdtemp folder, both 0700)
        hub_copy = base / "code" / "hub"
        hub_copy.mkdir(parents=True)
        for name in ("__init__.py", "singleuser.py", "classroom.py"):
            shutil.copy(ROOT / "hub" / name, hub_copy / name)
        homes = {"ada": (base / "ada", 54321), "bo": (base / "bo", 54322)}
        for home, uid in homes.values():
            home.mkdir(mode=0o755)  # as useradd may make it: readable by all
            os.chown(home, uid, uid)
        setup = (
            "import sys; from pathlib import Path; from hub import singleuser; h = Path(sys.argv[1]); "
            "singleuser.private_home(h); singleuser.hand_out(h, sys.argv[2])"
        )
        read = "import sys; from pathlib import Path; print(Path(sys.argv[1]).read_text())"

        # a Python the students' accounts may run (this one may sit in root's home); singleuser.py's setup of a home
        # needs the standard library only
        python = next((p for p in ("/usr/bin/python3", sys.executable) if _runs_as(p, homes["ada"][1])), None)
        if python is None:
            pytest.skip("no Python that another account may run")

        def as_user(uid, code, *args):
            return subprocess.run(
                [python, "-c", code, *args],
                user=uid,
                group=uid,
                extra_groups=[],
                cwd=base,
                env={"PYTHONPATH": str(hub_copy.parent), "HOME": "/nonexistent", "PATH": os.environ["PATH"]},
                capture_output=True,
                text=True,
            )

        for home, uid in homes.values():
            r = as_user(uid, setup, str(home), str(handout))
            assert r.returncode == 0, r.stderr
            assert (home.stat().st_mode & 0o777) == 0o700
        ada_stub = homes["ada"][0] / "kit" / "exercises" / "ex1_add2_tail" / "ex1_add2_tail.h"
        assert as_user(homes["ada"][1], read, str(ada_stub)).returncode == 0  # her own file
        r = as_user(homes["bo"][1], read, str(ada_stub))
        assert r.returncode != 0 and "PermissionError" in r.stderr, r.stdout + r.stderr
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)


def test_the_hub_config_makes_the_hand_out_and_an_admin(tmp_path, monkeypatch, capfd):
    """hub/jupyterhub_config.py as JupyterHub reads it: the instructor is the admin, with a password of their own;
    the roster is read from the class folder; each student's server is pointed at a hand-out made at the start."""
    from traitlets.config import Config

    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "students.txt").write_text("ada\nbo\n")
    for name in ("LABKIT_STUDENTS", "LABKIT_HUB_PASSWORD", "LABKIT_HUB_ADMIN_PASSWORD", "LABKIT_HUB_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LABKIT_HUB_STATE", str(tmp_path / "hub"))
    monkeypatch.setenv("LABKIT_CLASS_DIR", str(tmp_path / "class"))
    monkeypatch.setenv("LABKIT_ADMIN", "prof")
    monkeypatch.setenv("LABKIT_HUB_WARM", "0")
    c = Config()
    path = ROOT / "hub" / "jupyterhub_config.py"
    exec(compile(path.read_text(), str(path), "exec"), {"get_config": lambda: c, "__file__": str(path)})
    assert c.Authenticator.admin_users == {"prof"} and c.Authenticator.allowed_users == {"ada", "bo"}
    admin_password = tmp_path / "hub" / "admin_password"
    assert (admin_password.stat().st_mode & 0o777) == 0o600
    assert c.SharedPasswordAuthenticator.admin_password == admin_password.read_text().strip()
    assert c.SharedPasswordAuthenticator.admin_password != c.SharedPasswordAuthenticator.user_password
    # the students read the class's compiler cache, and never write it
    assert c.Spawner.environment["LABKIT_CACHE_DIR"] == str((tmp_path / "hub" / "compiler-cache").resolve())
    assert c.Spawner.environment["LABKIT_CACHE_READONLY"] == "1"
    handout = Path(c.Spawner.environment["LABKIT_HANDOUT"])
    assert (handout / "exercises").is_dir() and not (handout / "solutions").exists()
    changed = classroom.changed_files(ROOT)
    assert ("handed-out files have changes not committed" in capfd.readouterr().err) == bool(changed)
