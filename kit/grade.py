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
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import loader
from kit import checks
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
# the exercises with a check that times the GPU (their check.py says TIMES_THE_GPU = True): a class's grading runs them
# after every other exercise of every student (_grade_class), and the test suite grades their reference solutions alone
TIMED = [name for name, module in CHECKS.items() if getattr(module, "TIMES_THE_GPU", False)]


_ops_cache = {}


def _ops_for(kit):
    """One Ops of exercises per kit for the whole process: the kit's own building where `ops` builds, a copy's
    building into <copy>/.build."""
    if kit not in _ops_cache:
        _ops_cache[kit] = exercise_ops(kit, build_dir=None if kit == loader.ROOT else kit / ".build")
    return _ops_cache[kit]


def _built(kit, name):
    """Build (and load) exercise `name` of a kit, as its check would first; False where that failed (check() reports
    why), True where it worked or there is no op to build (ex6 is Python)."""
    try:
        getattr(_ops_for(Path(kit or loader.ROOT).resolve()), name).refresh()
    except (loader.CompileError, loader.LoadError):
        return False
    except AttributeError:
        pass
    return True


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
    p.add_argument("-j", "--jobs", type=int, help=f"--class: students graded at once (default {default_jobs()} here)")
    p.add_argument(
        "--timeout", type=float, default=300, help="--class: seconds for each exercise, its build included (300)"
    )
    p.add_argument(
        "--check-timeout", type=float, default=120, help="--class: seconds for each check after the build (120)"
    )
    p.add_argument(
        "--student-timeout", type=float, default=1800, help="--class: seconds for each student (default 1800)"
    )
    p.add_argument("--jsonl", help=argparse.SUPPRESS)  # each report as a line, as soon as it is done (--class)
    args = p.parse_args(argv)
    unknown = [e for e in args.exercises if e not in CHECKS]
    if unknown:
        p.error(f"no exercise {', '.join(unknown)}; exercises: {', '.join(EXERCISES)}")
    if args.klass:
        limits = Limits(args.timeout, args.check_timeout, args.student_timeout)
        return _grade_class(Path(args.klass), args.exercises, args.json, args.jobs, limits)
    if args.jsonl:
        checks.progress = lambda exercise, result: _append_line(
            args.jsonl, {"exercise": exercise, "check": result and asdict(result)}
        )
        for name in args.exercises or EXERCISES:
            # a class graded at once: a timed check elsewhere waits for this exercise's checks to end, but not for its
            # build, which needs no GPU (a failed build runs no check on it, so it takes no hold either)
            with checks.gpu_shared() if _built(args.kit, name) else contextlib.nullcontext():
                report = check(name, kit=args.kit, quiet=True)
            _append_line(args.jsonl, report.to_dict())
        return 0
    if args.solutions:
        args.kit = str(with_solutions(tempfile.mkdtemp(prefix="labkit-solutions-")))
    reports = check(*args.exercises, kit=args.kit)
    reports = reports if isinstance(reports, list) else [reports]
    passed, failed = sum(r.passed for r in reports), sum(r.failed for r in reports)
    print(f"exercises: {passed} passed, {failed} failed, {len(reports) - passed - failed} not fully checkable here")
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n")
    return 1 if failed else 0


def default_jobs():
    """Students graded at once: half the cores (each student's build gets cores / jobs compile jobs), and no more
    than the available memory / 3 GiB (a child with torch loaded and a compiler running), at least 1."""
    cores = os.cpu_count() or 1
    available = 0
    try:
        with open("/proc/meminfo") as f:
            available = next((int(x.split()[1]) * 1024 for x in f if x.startswith("MemAvailable:")), 0)
    except OSError:
        pass
    return max(1, min(cores // 2, available // (3 * 1024**3) if available else cores))


def _failed(name, check, detail, hint="", finished=()):
    """The report (as a dict) of an exercise stopped in `check`, after the checks `finished` (dicts)."""
    stop = {"check": check, "status": "fail", "detail": detail, "hint": hint}
    return {"exercise": name, "passed": False, "failed": True, "results": [*finished, stop]}


def _append_line(path, item):
    with open(path, "a") as f:
        f.write(json.dumps(item) + "\n")


@dataclass(frozen=True)
class Limits:
    """Seconds a student's grading may take: an exercise (its build and its checks), each check after the build,
    and the student in all."""

    exercise: float = 300
    check: float = 120
    student: float = 1800


DEFAULT_LIMITS = Limits()
STOPPED_HINT = "run it in a notebook: does it return?"


# the process groups of the graders running now (each in a session of its own, so that a stopped one ends with its
# compilers): a signal to the class's grading reaches none of them, so its handler ends them (_end_graders)
_graders = set()


def _end_graders(signum, _frame):
    """SIGTERM or SIGINT (Ctrl-C, `timeout`) to the class's grading: end every grader with it, then die of the signal
    as without this handler; else the graders, in sessions of their own, would go on compiling and grading."""
    for pgid in list(_graders):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def grade_student(kit, exercises, limits=DEFAULT_LIMITS, env=None):
    """A student's kit graded in child processes, one exercise after another in teaching order, each within its
    limits (Limits: the exercise, each of its checks, the student). The child reports each check as it finishes; an
    exercise whose check runs past its time (an endless loop, a hung kernel) or whose process crashes (an abort)
    keeps the checks that finished, fails the one that did not, saying so, and the next exercise goes on in a new
    child. Returns the reports as dicts (Report.to_dict), in teaching order."""
    todo = [e for e in EXERCISES if e in exercises]
    reports, t_student = [], time.monotonic()
    while todo:
        with tempfile.TemporaryDirectory(prefix="labkit-grade-") as tmp:
            lines, log = Path(tmp) / "reports.jsonl", Path(tmp) / "log"
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "kit.grade", *todo, "--kit", str(kit), "--jsonl", str(lines)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=loader.ROOT,
                    env=env,
                    start_new_session=True,  # its compilers too, to end them all at once
                )
            _graders.add(proc.pid)
            t_exercise = t_check = time.monotonic()
            why, consumed, finished, built = None, 0, [], False
            while True:
                rc = proc.poll()
                text = lines.read_text() if lines.exists() else ""
                for line in text.split("\n")[consumed:-1]:  # whole lines only: the last may be being written
                    consumed += 1
                    item, t_check = json.loads(line), time.monotonic()
                    if "results" in item:  # an exercise's whole report: the next exercise begins
                        reports.append(item)
                        todo.remove(item["exercise"])
                        t_exercise, finished, built = t_check, [], False
                    else:  # one check done (or, None, the op built)
                        built = True
                        finished += [item["check"]] if item["check"] else []
                if rc is not None:
                    break
                now = time.monotonic()
                if now - t_exercise > limits.exercise:
                    why = f"did not finish in {limits.exercise:g} s (an endless loop, or a deadlock?): stopped"
                elif built and now - t_check > limits.check:
                    after = f"the check after {finished[-1]['check']!r}" if finished else "its first check"
                    why = f"{after} did not finish in {limits.check:g} s (an endless loop, or a deadlock?): stopped"
                elif now - t_student > limits.student:
                    why = f"the student's time ({limits.student:g} s for every exercise) ran out: stopped"
                if why:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
                time.sleep(0.2)
            _graders.discard(proc.pid)
            if todo:
                name = todo.pop(0)
                if why:
                    reports.append(_failed(name, "finishes in time", why, STOPPED_HINT, finished))
                else:
                    tail = log.read_text(errors="replace").strip().splitlines()[-5:]
                    crash = f"its process ended (status {proc.returncode}): " + " | ".join(tail)
                    reports.append(_failed(name, "runs to the end", crash, "", finished))
                if time.monotonic() - t_student > limits.student:
                    reports += [_failed(e, "graded", "not graded: the student's time ran out") for e in todo]
                    todo = []
    return reports


def _grade_class(folder, exercises, json_path, jobs=None, limits=DEFAULT_LIMITS):
    """Every student of the folder, `jobs` at once, each in child processes (grade_student): one student's crashing
    or endless kernel must not end or hold up everyone's grading. Prints a line per student as they finish.

    In two rounds. First every student's exercises that time nothing, with no lock on the GPU: they share it freely.
    Then the exercises that time the GPU (TIMED), under the GPU's lock (kit/checks.py): a timed part has the GPU alone,
    and waits only for the graders of those few exercises to end their checks in flight. With the rounds mixed, each
    of a class's timed parts (3 a solved student) waited for every other grader's exercise of the moment, whichever:
    30 students on the H200 took over 460 s to grade. In two rounds they took 252 s, against 210 s with no lock at all
    (when timed checks failed correct answers). A student's time limit covers both rounds."""
    jobs = jobs or default_jobs()
    cores = os.cpu_count() or 1
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(loader.ROOT), os.environ.get("PYTHONPATH")]))}
    env.setdefault("MAX_JOBS", str(max(1, cores // jobs)))  # the students graded at once share the cores
    env.setdefault("OMP_NUM_THREADS", str(max(1, cores // jobs)))
    env.pop(checks.GPU_LOCK, None)
    students = sorted(d for d in folder.iterdir() if (d / "exercises").is_dir())
    wanted = [e for e in EXERCISES if e in (exercises or EXERCISES)]
    rounds = [[e for e in wanted if e not in TIMED], [e for e in wanted if e in TIMED]]
    book = {s.name: [] for s in students}
    spent = dict.fromkeys(book, 0.0)
    lock = folder / ".gpu.lock"  # the GPU's lock for the timed checks (kit/checks.py)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _end_graders)

    def grade_in_round(student, todo, round_env):
        left = limits.student - spent[student.name]
        if left <= 0:
            return [_failed(e, "graded", "not graded: the student's time ran out") for e in todo]
        t0 = time.monotonic()
        try:
            return grade_student(student, todo, Limits(limits.exercise, limits.check, left), round_env)
        finally:
            spent[student.name] += time.monotonic() - t0

    try:
        for timed, todo in enumerate(rounds):
            if not todo:
                continue
            last = timed or not rounds[1]
            round_env = {**env, checks.GPU_LOCK: str(lock)} if timed else env
            with ThreadPoolExecutor(jobs) as pool:
                running = {pool.submit(grade_in_round, s, todo, round_env): s for s in students}
                for done in as_completed(running):
                    name = running[done].name
                    book[name] += done.result()
                    passed = sum(x["passed"] for x in book[name])
                    if last:
                        print(f"{name}: {passed}/{len(book[name])}", flush=True)
                    else:
                        print(f"{name}: {passed}/{len(book[name])} so far; {', '.join(rounds[1])} next", flush=True)
    finally:
        for path in checks.gpu_lock_paths(lock):
            path.unlink(missing_ok=True)
    order = {e: i for i, e in enumerate(EXERCISES)}
    book = {name: sorted(reports, key=lambda x: order[x["exercise"]]) for name, reports in sorted(book.items())}
    if json_path:
        Path(json_path).write_text(json.dumps(book, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
