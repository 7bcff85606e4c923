"""What students get and what only the instructor sees.

The hand-out: what git tracks at HEAD in the instructor's kit (an allow-list), less solutions/, tests/ (which type the
answers in) and hub/. So a student never gets the instructor's working files: solved stubs (the committed stub is
handed out), executed notebooks (the committed ones are stripped; the hand-out's are stripped again), grades,
collected submissions, the roster, build folders. An edit the instructor has not committed is not handed out either:
`changed_files` lists those, and the hub warns of them when it starts.

The class folder (LABKIT_CLASS_DIR, default ~/.labkit-class of the instructor, mode 0700): the roster
(students.txt), the collected submissions, grades.json / grades.csv: outside anything handed out, readable by the
instructor alone."""

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
NOT_HANDED_OUT = ("solutions", "tests", "hub")  # tracked folders that students never get
# where there is no git checkout (a kit baked into an image): copy it all but these
NOT_COPIED = (
    *NOT_HANDED_OUT,
    *(".git", ".venv", ".build", ".hub", ".whl", "__pycache__", ".ipynb_checkpoints", ".pytest_cache"),
)  # .whl: the wheels scripts/gpu_carry.sh gathers for a GPU machine


def class_dir(make=True):
    """The instructor's class folder (LABKIT_CLASS_DIR, default ~/.labkit-class), made with mode 0700."""
    d = Path(os.environ.get("LABKIT_CLASS_DIR") or Path.home() / ".labkit-class").expanduser().resolve()
    if make:
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o700)
    return d


def roster():
    """The file of student names: LABKIT_STUDENTS, else students.txt of the class folder if there is one."""
    if os.environ.get("LABKIT_STUDENTS"):
        return Path(os.environ["LABKIT_STUDENTS"])
    path = class_dir(make=False) / "students.txt"
    return path if path.is_file() else None


def _pathspec():
    return ["--", ".", *(f":(exclude){d}" for d in NOT_HANDED_OUT)]


def is_git_checkout(kit=KIT):
    r = subprocess.run(["git", "-C", str(kit), "rev-parse", "--show-prefix"], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == ""  # the kit is the top of a checkout (or worktree)


def _status(kit, untracked):
    r = subprocess.run(
        ["git", "-C", str(kit), "status", "--porcelain=v1", "-z", f"--untracked-files={untracked}", *_pathspec()],
        capture_output=True,
        text=True,
        check=True,
    )
    return [(entry[:2], entry[3:]) for entry in r.stdout.split("\0") if entry[3:]]


def changed_files(kit=KIT):
    """Files handed out whose working copy differs from HEAD (uncommitted edits students will not get)."""
    return sorted(path for _, path in _status(kit, "no"))


def new_files(kit=KIT):
    """Files git does not track (and does not ignore) where the hand-out's files are: students will not get them."""
    return sorted(path for state, path in _status(kit, "all") if state == "??")


def python_path(kit):
    """PYTHONPATH for a child process of `kit`: the kit first, then the caller's own path (where packages may come
    from, as on a machine whose wheels are installed into a folder of their own)."""
    return os.pathsep.join(filter(None, [str(kit), os.environ.get("PYTHONPATH")]))


def strip_notebooks(root, kit=KIT):
    """Every notebook under root without outputs (kit/nbstrip.py, in a process of its own: the hub imports none of
    the kit)."""
    notebooks = [str(p) for p in Path(root).rglob("*.ipynb")]
    if notebooks:
        subprocess.run(
            [sys.executable, "-m", "kit.nbstrip", *notebooks],
            cwd=kit,
            env={**os.environ, "PYTHONPATH": python_path(kit)},
            check=True,
            capture_output=True,
        )


def make_handout(dest, kit=KIT):
    """dest: the hand-out, made afresh (into a temporary name, then renamed); readable by everyone, as the students'
    own accounts copy it. From git's HEAD where the kit is a checkout, else a copy of the kit less NOT_COPIED."""
    dest = Path(dest)
    part = dest.with_name(dest.name + ".partial")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    if is_git_checkout(kit):
        tar = subprocess.run(
            ["git", "-C", str(kit), "archive", "--format=tar", "HEAD", *_pathspec()], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(part, filter="data")
    else:
        shutil.copytree(kit, part, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True, dirs_exist_ok=True)
    strip_notebooks(part)
    for d, _dirs, files in os.walk(part):
        os.chmod(d, 0o755)
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.stat(p).st_mode & 0o100 else 0o644)
    shutil.rmtree(dest, ignore_errors=True)
    part.rename(dest)
    return dest
