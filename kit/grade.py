"""The exercise grader: `spec("ex1_add2_tail")` shows an exercise's task and `check("ex1_add2_tail")` grades it, in a
notebook cell; `make check` grades all of them.

Each exercise is graded against PyTorch's own ops on awkward sizes and on every device this machine has; a failure
names the smallest failing input, the expected and actual values, and a hint. GPU-only checks say so where there is
no GPU. For an instructor:
  python -m kit.grade                               every exercise of ./exercises (the stubs fail: that is expected)
  python -m kit.grade --solutions                   the same with solutions/ laid over a copy (all must pass)
  python -m kit.grade --kit alice --json alice.json       one student's copy of the kit (alice/exercises, alice/kernels)
  python -m kit.grade --class submissions/ --json grades.json        every student folder under submissions/
"""

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import loader
from kit.checks import exercise_ops


def find_exercises(root=loader.ROOT):
    """Every exercise of the kit: a folder of exercises/ with a check.py, in the order of the lessons (each
    check.py's NUMBER). name -> the check module. The checks are always the kit's own, also when a student's copy is
    graded: a student edits the stub, never the check."""
    found = []
    for check in sorted((root / "exercises").glob("*/check.py")):
        name = check.parent.name
        spec = importlib.util.spec_from_file_location(f"labkit_check_{name}", check)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found.append((module.NUMBER, name, module))
    return {name: module for _, name, module in sorted(found)}


CHECKS = find_exercises()
EXERCISES = list(CHECKS)


_ops_cache = {}


def _ops_for(kit):
    """One Ops of exercises per kit for the whole process: the kit's own building where `ops` builds, a copy's
    building into <copy>/.build."""
    if kit not in _ops_cache:
        _ops_cache[kit] = exercise_ops(kit, build_dir=None if kit == loader.ROOT else kit / ".build")
    return _ops_cache[kit]


def check(*names, kit=None, quiet=False):
    """Grade exercises (all if none named) of a kit (this one unless given) and print a report for each; returns
    the reports."""
    kit = Path(kit or loader.ROOT).resolve()
    ops = _ops_for(kit)
    reports = []
    for name in names or EXERCISES:
        if name not in CHECKS:
            raise ValueError(f"no exercise {name!r}; exercises: {', '.join(EXERCISES)}")
        report = CHECKS[name].grade(ops, kit)
        reports.append(report)
        if not quiet:
            print(report, flush=True)
    return reports if len(reports) > 1 else reports[0]


def spec(name):
    """An exercise's task, as its check.py's docstring states it (the one place it is written), with the file to
    edit: Markdown in a notebook (a cell that ends with `spec(name)` shows it), plain text elsewhere."""
    if name not in CHECKS:
        raise ValueError(f"no exercise {name!r}; exercises: {', '.join(EXERCISES)}")
    module = CHECKS[name]
    title, _, rest = module.__doc__.strip().partition("\n")
    text = f"**{title}** Edit `{module.EDIT}`.\n{rest}"
    try:
        from IPython.display import Markdown
    except ImportError:
        return text
    return Markdown(text)


def with_solutions(dest):
    """A copy of the kit (kernels/, exercises/) at dest with solutions/ laid over it: solutions/<exercise>/ goes over
    exercises/<exercise>/, file by file. Returns the copy."""
    dest = Path(dest)
    for part in ("kernels", "exercises"):
        shutil.copytree(loader.ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        loader.ROOT / "solutions", dest / "exercises", ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
    )
    return dest


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kit.grade", description=__doc__.split("\n")[0])
    p.add_argument("exercises", nargs="*", help=f"default: all ({', '.join(EXERCISES)})")
    p.add_argument("--kit", help="the kit to grade (a student's copy: a folder with exercises/ and kernels/)")
    p.add_argument("--solutions", action="store_true", help="grade solutions/ laid over a copy of the kit")
    p.add_argument("--class", dest="klass", help="a folder of student kits (each with exercises/): grade each")
    p.add_argument("--json", help="also write the results here, for a gradebook")
    args = p.parse_args(argv)
    if args.klass:
        return _grade_class(Path(args.klass), args.exercises, args.json)
    if args.solutions:
        args.kit = str(with_solutions(tempfile.mkdtemp(prefix="labkit-solutions-")))
    reports = check(*args.exercises, kit=args.kit)
    reports = reports if isinstance(reports, list) else [reports]
    passed, failed = sum(r.passed for r in reports), sum(r.failed for r in reports)
    print(f"exercises: {passed} passed, {failed} failed, {len(reports) - passed - failed} not fully checkable here")
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n")
    return 1 if failed else 0


def _grade_class(folder, exercises, json_path):
    """Each student in a child process: one student's crashing kernel must not end everyone's grading."""
    book = {}
    for student in sorted(d for d in folder.iterdir() if (d / "exercises").is_dir()):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            r = subprocess.run(
                [sys.executable, "-m", "kit.grade", *exercises, "--kit", str(student), "--json", f.name],
                capture_output=True,
                text=True,
                cwd=loader.ROOT,
            )
            try:
                book[student.name] = json.loads(Path(f.name).read_text())
            except (json.JSONDecodeError, OSError):
                book[student.name] = {"error": (r.stderr or r.stdout)[-2000:]}
        done = book[student.name]
        score = "crashed" if isinstance(done, dict) else f"{sum(x['passed'] for x in done)}/{len(done)}"
        print(f"{student.name}: {score}")
    if json_path:
        Path(json_path).write_text(json.dumps(book, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
