"""Grading a class (`make grade-class`: hub/collect.py over kit/grade.py --class): several students at once, a time
limit per exercise (a student's endless loop fails that exercise, says so, and the others are still graded), the
exercises in teaching order, nbgrader's gradebook columns in grades.csv, each student's own report in their home, late
files named against a deadline, everything else in the instructor's class folder and nothing of it handed out."""

import csv
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

from hub import classroom, collect
from kit import checks, grade

EX6 = "exercises/ex6_time_kernel/ex6_time_kernel.py"
LOOPS = "def time_kernel(fn, reps=20):\n    while True:\n        pass\n"  # an endless loop on the CPU path
EX8 = "exercises/ex8_block_sum/ex8_block_sum.h"


def _student(homes, name, solved=(), edits=None):
    """homes/<name>/kit: the kernels and exercises as handed out, with the solutions of `solved` laid over."""
    kit = homes / name / "kit"
    for part in ("kernels", "exercises"):
        shutil.copytree(ROOT / part, kit / part, ignore=shutil.ignore_patterns("__pycache__"))
    for exercise in solved:
        shutil.copytree(ROOT / "solutions" / exercise, kit / "exercises" / exercise, dirs_exist_ok=True)
    for path, text in (edits or {}).items():
        (kit / path).write_text(text)
    return kit


def _collect(homes, class_dir, *args, timeout=600):
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "hub.collect", *args, "--homes", str(homes), "--class-dir", str(class_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        # the grading's mechanics on the CPU: a GPU shared with a parallel run would make ex6's timing check (a 2 ms
        # kernel within 15%) fail for the load, not for the answer; test_grade.py grades on the GPU
        env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""},
        timeout=timeout,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout, time.perf_counter() - t0


def test_a_hung_student_is_stopped_and_the_others_are_graded(tmp_path):
    homes = tmp_path / "homes"
    _student(homes, "ada", solved=["ex6_time_kernel"])
    _student(homes, "bo")  # the stub: fails
    _student(homes, "cy", edits={EX6: LOOPS})
    out, took = _collect(homes, tmp_path / "class", "ex6_time_kernel", "--jobs", "2", "--timeout", "15")
    book = json.loads((tmp_path / "class" / "grades.json").read_text())
    assert sorted(book) == ["ada", "bo", "cy"]
    (cy,) = book["cy"]
    assert cy["failed"] and cy["results"][0]["check"] == "finishes in time", cy
    assert "did not finish in 15 s" in cy["results"][0]["detail"]
    assert not book["ada"][0]["failed"] and book["bo"][0]["failed"]
    assert "did not finish in 15 s" in (homes / "cy" / "grades" / "report.md").read_text()
    assert took < 120, f"grading took {took:.0f} s: the hung student held it up?\n{out}"


def _processes_naming(text):
    """The pids of the processes whose command line contains `text`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(proc.name))
        except OSError:  # ended meanwhile
            pass
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the processes from /proc (Linux)")
def test_stopping_the_class_grading_stops_every_grader(tmp_path):
    """A signal to `kit.grade --class` (Ctrl-C, timeout's SIGTERM) ends the graders too: each runs in a session of its
    own (to end it with its compilers), which no signal to the grading's own group reaches."""
    folder = tmp_path / "class"
    kit = _student(tmp_path / "homes", "cy", edits={EX6: LOOPS})
    shutil.move(kit, folder / "cy")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    grading = subprocess.Popen(
        [sys.executable, "-m", "kit.grade", "ex6_time_kernel", "--class", str(folder)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    mark = str(folder / "cy")
    deadline = time.monotonic() + 300
    while not _processes_naming(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    graders = _processes_naming(mark)
    assert graders, "no grader started"
    grading.terminate()
    assert grading.wait(timeout=30) == -15
    for _ in range(50):
        if not _processes_naming(mark):
            break
        time.sleep(0.1)
    assert not _processes_naming(mark), "a grader outlived the grading"


HOLD = """
import sys, time
from kit import checks
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
with checks.gpu_shared():  # another grader, checking an exercise
    print("entered", time.time(), flush=True)
    time.sleep(float(sys.argv[1]))
    print("left", time.time(), flush=True)
"""


def _grader(seconds, at=0.0):
    """Another grader's process, holding the GPU shared for `seconds` from the time `at` on, or once it can; its
    lines say when."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(seconds), str(at)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )


def test_a_timed_check_waits_until_no_other_grader_is_on_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv(checks.GPU_LOCK, str(tmp_path / "gpu.lock"))
    other = _grader(2)
    assert other.stdout.readline().startswith("entered")
    with checks.gpu_shared(), checks.gpu_alone() as alone:  # this grader's exercise, then its timed part
        timed_from = time.time()
    left = float(other.stdout.readline().split()[1])
    assert alone and timed_from >= left, (timed_from, left)
    other.wait()


def test_no_exercise_starts_while_a_timed_check_waits_or_runs(tmp_path, monkeypatch):
    """The turnstile: a grader that begins an exercise after a timed check began to wait comes in after it, or a
    stream of new exercises could keep the timed check waiting for ever."""
    monkeypatch.setenv(checks.GPU_LOCK, str(tmp_path / "gpu.lock"))
    first = _grader(8)
    assert first.stdout.readline().startswith("entered")
    later = _grader(0, at=time.time() + 3)  # begins an exercise while `first` still holds the GPU shared
    times = {}

    def timed_check():
        with checks.gpu_shared(), checks.gpu_alone():
            times["from"] = time.time()
            time.sleep(1)
            times["to"] = time.time()

    waiting = threading.Thread(target=timed_check)
    waiting.start()  # waits for `first` from now on; `later` comes while it waits
    entered = float(later.stdout.readline().split()[1])
    waiting.join()
    assert entered >= times["to"], (entered, times)
    first.wait(), later.wait()


def test_a_grader_builds_while_a_timed_check_has_the_gpu(tmp_path):
    """A build needs no GPU: a grader compiles its exercise while a timed check elsewhere holds the GPU alone, and
    waits only to run its checks. (With the build inside the grader's shared hold, every timed check of a class
    waited for the other graders' compiles too.)"""
    import fcntl

    kit = _student(tmp_path / "homes", "ada", solved=["ex1_add2_tail"])
    lock = tmp_path / "gpu.lock"
    out = tmp_path / "out.jsonl"
    files = [os.open(p, os.O_RDWR | os.O_CREAT, 0o600) for p in checks.gpu_lock_paths(lock)]
    for fd in reversed(files):  # the turnstile, then the lock: a timed check that has the GPU
        fcntl.flock(fd, fcntl.LOCK_EX)
    grader = subprocess.Popen(
        [sys.executable, "-m", "kit.grade", "--jsonl", str(out), "--kit", str(kit), "ex1_add2_tail"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "", checks.GPU_LOCK: str(lock)},
    )
    try:
        deadline = time.time() + 150  # a cold build of ex1 takes ~20 s on 2 cores
        while not list((kit / ".build").rglob("labkit_ex1_add2_tail*.so")) and time.time() < deadline:
            assert grader.poll() is None, "the grader ended while the GPU was held"
            time.sleep(0.2)
        assert list((kit / ".build").rglob("labkit_ex1_add2_tail*.so")), "no build while the GPU was held"
        time.sleep(1)
        assert not out.exists() or '"results"' not in out.read_text(), "checked while the GPU was held"
    finally:
        for fd in files:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
    assert grader.wait(timeout=300) == 0
    (report,) = [json.loads(line) for line in out.read_text().splitlines() if '"results"' in line]
    assert report["exercise"] == "ex1_add2_tail" and not report["failed"], report


def test_an_exercise_without_an_op_is_checked_under_the_gpu_lock(tmp_path):
    """ex6 (Python, nothing to build) still checks inside the shared hold: none of its checks runs while a timed
    check elsewhere has the GPU."""
    import fcntl

    kit = _student(tmp_path / "homes", "ada", solved=["ex6_time_kernel"])
    lock, out = tmp_path / "gpu.lock", tmp_path / "out.jsonl"
    files = [os.open(p, os.O_RDWR | os.O_CREAT, 0o600) for p in checks.gpu_lock_paths(lock)]
    for fd in reversed(files):
        fcntl.flock(fd, fcntl.LOCK_EX)
    grader = subprocess.Popen(
        [sys.executable, "-m", "kit.grade", "--jsonl", str(out), "--kit", str(kit), "ex6_time_kernel"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "", checks.GPU_LOCK: str(lock)},
    )
    try:
        time.sleep(8)  # a Python start and torch's import, then the check would begin
        assert grader.poll() is None and not (out.exists() and out.read_text().strip()), "checked while held"
    finally:
        for fd in files:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
    assert grader.wait(timeout=300) == 0
    assert any('"results"' in line for line in out.read_text().splitlines())


TIMES = """
import sys, time
from pathlib import Path
from kit import checks
print("ready", flush=True)
while not Path(sys.argv[1]).exists():
    time.sleep(0.01)
with checks.gpu_shared():  # a grader's exercise: both are in one before either times the GPU
    time.sleep(1)
    t0 = time.time()
    with checks.gpu_alone() as alone:
        time.sleep(0.5)
    print("alone", alone, time.time() - t0, flush=True)
"""


def test_two_timed_checks_at_once_have_the_gpu_alone_in_turn(tmp_path):
    """Two graders time the GPU at once, as in a class's round of timed exercises: one waits for the other's timed
    part, then has the GPU alone itself. (A grader that kept its shared hold while it waited for the turnstile kept
    out the one holding the turnstile, and both waited ALONE_WAIT, 60 s, then timed beside each other.)"""
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT), checks.GPU_LOCK: str(tmp_path / "gpu.lock")}
    graders = [
        subprocess.Popen([sys.executable, "-c", TIMES, str(go)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for grader in graders:
        assert grader.stdout.readline().strip() == "ready"
    go.touch()
    lines = [grader.communicate(timeout=200)[0].split() for grader in graders]
    assert [line[:2] for line in lines] == [["alone", "True"]] * 2, lines
    assert max(float(line[2]) for line in lines) < 10, lines


def test_a_timed_check_that_cannot_have_the_gpu_alone_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv(checks.GPU_LOCK, str(tmp_path / "gpu.lock"))
    monkeypatch.setattr(checks, "ALONE_WAIT", 0.5)
    hung = _grader(60)  # a grader whose check hangs: its own limit ends it, not this one's wait
    assert hung.stdout.readline().startswith("entered")
    with checks.gpu_shared(), checks.gpu_alone() as alone:
        pass
    hung.kill()
    hung.wait()
    assert not alone and "the GPU was not free in 0.5 s" in checks.shared_note(alone)


def test_a_hung_check_fails_alone_and_keeps_the_checks_before_it(tmp_path):
    """ex8 answered, but warp 0's loop over the slots steps only in row 0: the one-row check passes, the several-rows
    check loops forever. The grade keeps the first, fails the second by the check limit, long before the exercise's."""
    homes = tmp_path / "homes"
    answer = (ROOT / "solutions" / EX8.replace("exercises/", "")).read_text()
    endless = answer.replace("w < kEx8Warps; w++)", "w < kEx8Warps; w += (row == 0))")
    assert endless != answer
    _student(homes, "dee", edits={EX8: endless})
    out, took = _collect(homes, tmp_path / "class", "ex8_block_sum", "--check-timeout", "10")
    (dee,) = json.loads((tmp_path / "class" / "grades.json").read_text())["dee"]
    first, stopped = dee["results"]
    assert first["check"] == "matches x.sum(dim=-1) on cpu" and first["status"] == "pass", dee
    assert stopped["check"] == "finishes in time" and stopped["status"] == "fail", dee
    assert stopped["detail"].startswith("the check after 'matches x.sum(dim=-1) on cpu' did not finish in 10 s"), dee
    assert "did not finish in 10 s" in (homes / "dee" / "grades" / "report.md").read_text()
    assert took < 200, f"grading took {took:.0f} s: the exercise's limit (300 s) stopped the check, not its own?\n{out}"


def test_grades_a_class_into_the_class_folder_with_reports_and_a_gradebook(tmp_path):
    homes, class_dir = tmp_path / "homes", tmp_path / "class"
    ada = _student(homes, "ada", solved=["ex1_add2_tail"])
    _student(homes, "bo")
    deadline = time.time() - 3600
    for p in homes.rglob("*"):  # everyone's work: before the deadline, but for ada's ex1 stub
        os.utime(p, (deadline - 60, deadline - 60))
    late = ada / "exercises" / "ex1_add2_tail" / "ex1_add2_tail.h"
    os.utime(late, (deadline + 60, deadline + 60))
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(deadline))
    # asked for in the reverse order: graded and written in teaching order
    out, _ = _collect(homes, class_dir, "ex6_time_kernel", "ex1_add2_tail", "--jobs", "2", "--deadline", stamp)

    assert (class_dir.stat().st_mode & 0o777) == 0o700
    for name in ("grades.json", "grades.csv", "snapshot.json"):
        assert (class_dir / name).stat().st_mode & 0o077 == 0, f"{name} readable by others"
    book = json.loads((class_dir / "grades.json").read_text())
    assert [r["exercise"] for r in book["ada"]] == ["ex1_add2_tail", "ex6_time_kernel"]
    assert book["ada"][0]["passed"] and book["bo"][0]["failed"]
    header = next(line for line in out.splitlines() if line.startswith("student"))
    assert header.index("ex1_add2_tail") < header.index("ex6_time_kernel"), out
    # two rounds: every student's ex1 first, then ex6, whose check times the GPU, for everyone
    assert grade.TIMED == ["ex2_add2_vec4", "ex6_time_kernel", "ex9_matmul_tile"]
    rounds = [line for line in out.splitlines() if line.startswith(("ada: ", "bo: "))]
    assert sorted(rounds[:2]) == ["ada: 1/1 so far; ex6_time_kernel next", "bo: 0/1 so far; ex6_time_kernel next"], out
    assert sorted(rounds[2:]) == ["ada: 1/2", "bo: 0/2"], out

    with open(class_dir / "grades.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["student_id", "assignment", "timestamp", "raw_score", "score", "max_score"]
    assert [r[:2] for r in rows[1:]] == [
        ["ada", "ex1_add2_tail"],
        ["ada", "ex6_time_kernel"],
        ["bo", "ex1_add2_tail"],
        ["bo", "ex6_time_kernel"],
    ]
    ada_ex1, bo_ex1 = rows[1], rows[3]
    assert ada_ex1[3:] == ["1", "1", "1"] and float(bo_ex1[3]) < 1 and bo_ex1[5] == "1"
    assert ada_ex1[2] > stamp.replace(" ", "T")  # the late stub's time

    snap = json.loads((class_dir / "snapshot.json").read_text())
    assert snap["late"] == {"ada": ["exercises/ex1_add2_tail/ex1_add2_tail.h"]}
    report = homes / "ada" / "grades" / "report.md"
    assert report.stat().st_mode & 0o777 == 0o600
    text = report.read_text()
    assert "## ex1_add2_tail: passed" in text and "ex1_add2_tail.h" in text and "deadline" in text
    assert text.index("## ex1_add2_tail") < text.index("## ex6_time_kernel")
    assert "Grades of ada" not in (homes / "bo" / "grades" / "report.md").read_text()

    # a student who logs in after grading gets the hand-out: no classmate's work, no grade
    handout = classroom.make_handout(tmp_path / "handout", ROOT)
    files = [str(p.relative_to(handout)) for p in handout.rglob("*")]
    assert not any(f.startswith(("submissions", "grades", "snapshot", "solutions", ".hub")) for f in files), files


def test_exercises_are_in_teaching_order():
    book = {"ada": [{"exercise": e} for e in ("ex10_matmul_reg", "ex1_add2_tail", "ex3_bias_relu")]}
    assert collect.teaching_order(book) == ["ex1_add2_tail", "ex3_bias_relu", "ex10_matmul_reg"]
    assert collect.teaching_order({"ada": [{"exercise": e} for e in reversed(grade.EXERCISES)]}) == grade.EXERCISES


def test_points_are_shared_by_the_checks_that_ran():
    report = {"results": [{"status": s} for s in ("pass", "fail", "skip", "pass")]}
    assert collect.score(report) == (pytest.approx(2 / 3), 1.0)
    assert collect.score(report, 3) == (pytest.approx(2.0), 3.0)
    assert collect.parse_points(["ex7_warp_sum=2"]) == {"ex7_warp_sum": 2.0}


def test_late_files_are_those_modified_after_the_deadline(tmp_path):
    from datetime import datetime

    (tmp_path / "a").write_text("")
    (tmp_path / "b").write_text("")
    os.utime(tmp_path / "a", (1000, 1000))
    assert collect.late_files(tmp_path, datetime.fromtimestamp(2000).astimezone()) == ["b"]
    assert collect.late_files(tmp_path, None) == []
    assert Path(tmp_path).is_dir()
