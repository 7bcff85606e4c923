"""The instructor's grading of a class: collect every student's exercises/ (and the kernels/ they build on) from their
homes, grade them with `python -m kit.grade --class` (each student in a child process), write the JSON and print a
short table.

    python -m hub.collect                                  the homes of `make hub` (.hub/homes), every exercise
    python -m hub.collect --homes /home ex1_add2_tail      Unix users' homes (LABKIT_HUB_MODE=unix), one exercise

Each student's work is copied first (into --to, default submissions/), so grading reads a snapshot, not files a
student is saving meanwhile; a student is a folder of --homes with kit/exercises/ in it."""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
HOMES = Path(os.environ.get("LABKIT_HUB_STATE") or KIT / ".hub") / "homes"


def collect(homes, dest):
    """dest/<student>/{kernels,exercises}, copied from homes/<student>/kit/ (replacing an earlier copy); returns the
    students' names."""
    students = sorted(h.name for h in Path(homes).iterdir() if (h / "kit" / "exercises").is_dir())
    for name in students:
        shutil.rmtree(Path(dest) / name, ignore_errors=True)
        for part in ("kernels", "exercises"):
            src = Path(homes) / name / "kit" / part
            if src.is_dir():
                shutil.copytree(
                    src,
                    Path(dest) / name / part,
                    symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
                )
    return students


def table(book):
    """One line per student: each exercise's PASS / FAIL / skip (not fully checkable here), and the count passed."""
    exercises = sorted({r["exercise"] for reports in book.values() if isinstance(reports, list) for r in reports})
    width = max([len("student"), *map(len, book)])
    lines = ["  ".join(["student".ljust(width), *exercises, "passed"])]
    for name, reports in sorted(book.items()):
        if not isinstance(reports, list):
            last = (reports.get("error") or "no output").strip().splitlines()[-1]
            lines.append(f"{name.ljust(width)}  crashed: {last}")
            continue
        status = {r["exercise"]: "PASS" if r["passed"] else "FAIL" if r["failed"] else "skip" for r in reports}
        cells = [status.get(e, "-").ljust(len(e)) for e in exercises]
        lines.append("  ".join([name.ljust(width), *cells, f"{sum(r['passed'] for r in reports)}/{len(reports)}"]))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m hub.collect", description=__doc__.split("\n")[0])
    p.add_argument("exercises", nargs="*", help="default: every exercise")
    p.add_argument("--homes", default=str(HOMES), help=f"the folder of the students' homes (default {HOMES})")
    p.add_argument("--to", default="submissions", help="where the students' work is copied (default submissions/)")
    p.add_argument("--json", default="grades.json", help="the grades, every check of every student (grades.json)")
    args = p.parse_args(argv)
    args.to, args.json = Path(args.to).resolve(), Path(args.json).resolve()  # kit.grade runs in the kit's folder
    students = collect(args.homes, args.to)
    if not students:
        sys.exit(f"no student kits (<student>/kit/exercises/) in {args.homes}")
    print(f"collected {len(students)} students from {args.homes} into {args.to}/; grading", flush=True)
    r = subprocess.run(
        [sys.executable, "-m", "kit.grade", *args.exercises, "--class", str(args.to), "--json", str(args.json)],
        cwd=KIT,
        env={**os.environ, "PYTHONPATH": str(KIT)},
    )
    if r.returncode:
        return r.returncode
    print(table(json.loads(args.json.read_text())))
    print(f"every check of every student: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
