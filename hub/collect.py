"""The instructor's grading of a class: collect every student's exercises/ (and the kernels/ they build on) from their
homes, grade them with `python -m kit.grade --class` (several students at once, each in child processes with time
limits per exercise and per check), and write the results into the class folder (LABKIT_CLASS_DIR, default ~/.labkit-class, mode
0700: never handed out):

    submissions/<student>/   the snapshot of each student's work that was graded (copied when grading runs)
    grades.json              every check of every student
    grades.csv               one row per student and exercise, nbgrader's gradebook columns
    snapshot.json            when the snapshot was taken, the deadline, each student's files modified after it

and each student's own report, check by check, into their home: ~/grades/report.md (readable by them alone).

    python -m hub.collect                                  the homes of `make hub` (.hub/homes), every exercise
    python -m hub.collect --homes /home ex1_add2_tail      Unix users' homes (LABKIT_HUB_MODE=unix), one exercise
    python -m hub.collect --deadline "2026-12-01 18:00"    files modified after it are reported as late

The snapshot is taken when grading runs, so a student should stop editing by then; a file modified after --deadline
is graded like the others and named as late (in the report, the JSON and the CSV's timestamp): no penalty is
applied. Points: each exercise is worth 1 point (--points ex7_warp_sum=2 ... to weigh them), shared equally among
its checks that ran here (a check skipped for want of a GPU counts for nothing either way)."""

import argparse
import ast
import csv
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(KIT))
from hub import classroom  # noqa: E402

HOMES = Path(os.environ.get("LABKIT_HUB_STATE") or KIT / ".hub") / "homes"
CSV_COLUMNS = ["student_id", "assignment", "timestamp", "raw_score", "score", "max_score"]  # nbgrader's gradebook


def collect(homes, dest):
    """dest/<student>/{kernels,exercises}, copied from homes/<student>/kit/ (replacing an earlier copy, keeping the
    files' times); returns the students' names."""
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
                    ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", ".build"),
                )
    return students


def late_files(folder, deadline):
    """The files of a student's snapshot modified after the deadline (a datetime), as paths relative to it."""
    if deadline is None:
        return []
    t = deadline.timestamp()
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file() and p.stat().st_mtime > t)


def lesson_numbers(kit=KIT):
    """exercise -> its place in the lessons (NUMBER in its check.py), read from the source: the order kit.grade grades
    in (its CHECKS), without importing the kit here."""
    numbers = {}
    for check in (kit / "exercises").glob("*/check.py"):
        for node in ast.parse(check.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "NUMBER" for t in node.targets):
                numbers[check.parent.name] = ast.literal_eval(node.value)
    return numbers


def teaching_order(book):
    """The exercises graded, in the order of the lessons (kit.grade's CHECKS: ex1 before ex10)."""
    numbers = lesson_numbers()
    graded = {r["exercise"] for reports in book.values() for r in reports}
    return sorted(graded, key=lambda e: (numbers.get(e, float("inf")), e))


def score(report, points=1.0):
    """(raw score, max score) of an exercise's report: its points shared equally among the checks that ran."""
    ran = [r for r in report["results"] if r["status"] != "skip"]
    passed = sum(r["status"] == "pass" for r in ran)
    return (points * passed / len(ran) if ran else 0.0), float(points)


def table(book):
    """One line per student: each exercise's PASS / FAIL / skip (not fully checkable here), and the count passed."""
    exercises = teaching_order(book)
    width = max([len("student"), *map(len, book)])
    lines = ["  ".join(["student".ljust(width), *exercises, "passed"])]
    for name, reports in sorted(book.items()):
        status = {r["exercise"]: "PASS" if r["passed"] else "FAIL" if r["failed"] else "skip" for r in reports}
        cells = [status.get(e, "-").ljust(len(e)) for e in exercises]
        lines.append("  ".join([name.ljust(width), *cells, f"{sum(r['passed'] for r in reports)}/{len(reports)}"]))
    return "\n".join(lines)


def exercise_time(folder, exercise):
    """When the student last changed the exercise: the newest modification time of its files in the snapshot."""
    times = [p.stat().st_mtime for p in (Path(folder) / "exercises" / exercise).rglob("*") if p.is_file()]
    return datetime.fromtimestamp(max(times)).astimezone() if times else None


def write_csv(path, book, times, points):
    """grades.csv: a row per student and exercise (teaching order), timestamp = when the student last changed it."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        order = teaching_order(book)  # reads every check.py: once, not once per student
        for name, reports in sorted(book.items()):
            by_name = {r["exercise"]: r for r in reports}
            for exercise in order:
                if exercise not in by_name:
                    continue
                raw, most = score(by_name[exercise], points.get(exercise, 1.0))
                t = times[name].get(exercise)
                w.writerow(
                    [name, exercise, t.isoformat(timespec="seconds") if t else "", f"{raw:g}", f"{raw:g}", f"{most:g}"]
                )


def student_report(name, reports, snapshot, deadline, late, points):
    """A student's own report, in Markdown: each exercise, each check with its detail and hint."""
    total = [score(r, points.get(r["exercise"], 1.0)) for r in reports]
    lines = [
        f"# Grades of {name}",
        "",
        f"Your work as it was at {snapshot.isoformat(timespec='seconds')} (when it was collected)"
        + (f"; the deadline was {deadline.isoformat(timespec='minutes')}." if deadline else "."),
        f"Score: {sum(r for r, _ in total):g} of {sum(m for _, m in total):g} points.",
    ]
    if late:
        lines += ["", "Modified after the deadline (graded, and reported as late):", *[f"- `{p}`" for p in late]]
    for report, (raw, most) in zip(reports, total):
        verdict = "passed" if report["passed"] else "not passed yet" if report["failed"] else "not fully checkable here"
        lines += ["", f"## {report['exercise']}: {verdict} ({raw:g} / {most:g} points)", ""]
        for r in report["results"]:
            lines.append(f"- **{r['status'].upper()}** {r['check']}" + (f": {r['detail']}" if r["detail"] else ""))
            if r.get("hint"):
                lines.append(f"  - hint: {r['hint']}")
    return "\n".join(lines) + "\n"


def deliver(home, text):
    """~/grades/report.md of the student's home, readable by them alone (owned by the home's owner)."""
    d = Path(home) / "grades"
    d.mkdir(exist_ok=True)
    path = d / "report.md"
    path.write_text(text)
    st = Path(home).stat()
    for p, mode in ((d, 0o700), (path, 0o600)):
        if os.getuid() == 0:
            os.chown(p, st.st_uid, st.st_gid)
        p.chmod(mode)
    return path


def parse_points(items):
    points = {}
    for item in items or []:
        name, _, value = item.partition("=")
        points[name] = float(value)
    return points


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m hub.collect", description=__doc__.split("\n")[0])
    p.add_argument("exercises", nargs="*", help="default: every exercise")
    p.add_argument("--homes", default=str(HOMES), help=f"the folder of the students' homes (default {HOMES})")
    p.add_argument("--class-dir", help="where submissions and grades go (default LABKIT_CLASS_DIR or ~/.labkit-class)")
    p.add_argument("--to", help="where the students' work is copied (default <class folder>/submissions)")
    p.add_argument("--json", help="every check of every student (default <class folder>/grades.json)")
    p.add_argument("--deadline", help='files modified after it are reported late: "YYYY-MM-DD HH:MM" (local time)')
    p.add_argument("-j", "--jobs", type=int, help="students graded at once (default: from the cores and memory)")
    p.add_argument("--timeout", type=float, default=300, help="seconds for each exercise of a student (300)")
    p.add_argument("--check-timeout", type=float, default=120, help="seconds for each check after the build (120)")
    p.add_argument("--student-timeout", type=float, default=1800, help="seconds for each student (1800)")
    p.add_argument("--points", nargs="*", metavar="EXERCISE=N", help="an exercise's points (default 1 each)")
    p.add_argument("--no-reports", action="store_true", help="write no report into the students' homes")
    args = p.parse_args(argv)
    if args.class_dir:
        os.environ["LABKIT_CLASS_DIR"] = args.class_dir
    folder = classroom.class_dir()
    args.to = Path(args.to or folder / "submissions").resolve()
    args.json = Path(args.json or folder / "grades.json").resolve()  # kit.grade runs in the kit's folder
    deadline = datetime.fromisoformat(args.deadline).astimezone() if args.deadline else None
    points = parse_points(args.points)
    snapshot = datetime.now().astimezone()
    students = collect(args.homes, args.to)
    if not students:
        sys.exit(f"no student kits (<student>/kit/exercises/) in {args.homes}")
    print(
        f"collected {len(students)} students from {args.homes} into {args.to}/ at {snapshot:%Y-%m-%d %H:%M:%S}; grading",
        flush=True,
    )
    # the snapshot's times, before grading builds and caches files in it
    late = {name: late_files(args.to / name, deadline) for name in students}
    times = {
        name: {e.name: exercise_time(args.to / name, e.name) for e in (args.to / name / "exercises").iterdir()}
        for name in students
    }
    grade = [sys.executable, "-m", "kit.grade", *args.exercises, "--class", str(args.to), "--json", str(args.json)]
    grade += ["--timeout", str(args.timeout), "--check-timeout", str(args.check_timeout)]
    grade += ["--student-timeout", str(args.student_timeout)]
    grade += ["--jobs", str(args.jobs)] if args.jobs else []
    r = subprocess.run(grade, cwd=KIT, env={**os.environ, "PYTHONPATH": classroom.python_path(KIT)})
    if r.returncode:
        return r.returncode
    book = json.loads(args.json.read_text())
    order = {e: i for i, e in enumerate(teaching_order(book))}
    book = {name: sorted(reports, key=lambda x: order[x["exercise"]]) for name, reports in book.items()}
    csv_path = args.json.with_suffix(".csv")
    write_csv(csv_path, book, times, points)
    (args.json.parent / "snapshot.json").write_text(
        json.dumps(
            {
                "snapshot": snapshot.isoformat(timespec="seconds"),
                "deadline": deadline.isoformat(timespec="minutes") if deadline else None,
                "late": {name: files for name, files in late.items() if files},
            },
            indent=1,
        )
        + "\n"
    )
    for path in (args.json, csv_path, args.json.parent / "snapshot.json"):
        path.chmod(0o600)
    print(table(book))
    if not args.no_reports:
        for name, reports in book.items():
            deliver(Path(args.homes) / name, student_report(name, reports, snapshot, deadline, late[name], points))
        print(f"each student's report: <their home>/grades/report.md ({len(book)} written)")
    for name, files in late.items():
        if files:
            print(f"late ({name}): {', '.join(files)}")
    print(f"every check of every student: {args.json}; the gradebook: {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
