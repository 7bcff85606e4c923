"""What the checks of the exercises share: a report of named checks (pass, fail with a detail and a hint, or skip),
the devices to check on, inputs with sentinel memory after them, the first mismatch against PyTorch's result, and the
student's op built and loaded. Each exercise's check.py (exercises/<exercise>/check.py) imports these; kit/grade.py
finds the check.py files and runs them.
"""

import contextlib
import fcntl
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from building.compile_errors import CompileError, LoadError

GPU = torch.cuda.is_available()
PAD = 1024  # sentinel elements after every output: a kernel writing past n changes them

# Set by the grader's child process (kit/grade.py): called with the exercise's name and each Result as it is added,
# and with None once the student's op is built and loaded. A grader that stops a hung check learns from it which
# checks had finished, and when the build ended (the build and each check have time limits of their own).
progress = None


def _note(exercise, result):
    if progress is not None:
        progress(exercise, result)


def exercise_ops(kit, build_dir=None):
    """The ops of a kit's exercises/ (the kit's own, or a student's copy), with the shared headers of its
    kernels/common/: an Ops of their own, so that the lessons' `ops` lists no exercise."""
    import loader

    kit = Path(kit)
    return loader.Ops(kit / "exercises", build_dir=build_dir, common=kit / "kernels" / "common")


def child_ops_source(ops, name):
    """The lines a child process's code (kit.devices.run_isolated) starts with to get the same op as a name, `op`:
    the same kit and build folder."""
    import loader

    build = str(ops._build_dir or loader.build_root())
    return (
        f"from kit.checks import exercise_ops\n"
        f"    op = exercise_ops({str(ops._kernels.parent)!r}, build_dir={build!r}).{name}"
    )


@dataclass
class Result:
    check: str
    status: str  # "pass", "fail" or "skip"
    detail: str = ""
    hint: str = ""


@dataclass
class Report:
    exercise: str
    edit: str = ""  # the file (or folder) the student edits
    results: list = field(default_factory=list)

    @property
    def passed(self):
        """Every check ran here and passed."""
        return bool(self.results) and all(r.status == "pass" for r in self.results)

    @property
    def failed(self):
        return any(r.status == "fail" for r in self.results)

    def add(self, check, ok, detail="", hint=""):
        self.results.append(Result(check, "pass" if ok else "fail", detail, "" if ok else hint))
        _note(self.exercise, self.results[-1])

    def skip(self, check, why):
        self.results.append(Result(check, "skip", why))
        _note(self.exercise, self.results[-1])

    def __str__(self):
        lines = [f"{self.exercise}  ({self.edit})"]
        for r in self.results:
            lines.append(f"  {r.status.upper():4}  {r.check}" + (f": {r.detail}" if r.detail else ""))
            if r.hint:
                lines.append(f"        hint: {r.hint}")
        counts = {s: sum(r.status == s for r in self.results) for s in ("pass", "fail", "skip")}
        verdict = (
            "all checks pass"
            if self.passed
            else "not done yet"
            if self.failed
            else "no check failed, but some need hardware this machine lacks"
        )
        lines.append(f"  {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped: {verdict}")
        return "\n".join(lines)

    def to_dict(self):
        return {
            "exercise": self.exercise,
            "passed": self.passed,
            "failed": self.failed,
            "results": [asdict(r) for r in self.results],
        }


def devices():
    return ["cpu"] + (["cuda"] if GPU else [])


def padded(n, device, fill=float("nan"), dtype=torch.float32):
    """An n-element view at the start of a buffer with PAD more elements, all set to `fill`."""
    big = torch.full((n + PAD,), fill, device=device, dtype=dtype)
    return big[:n], big


def amid_nan(t):
    """t copied into the middle of a buffer with PAD elements of NaN on each side: contiguous, and a kernel that reads
    a little before or past it (a row off the map) reads NaN instead of memory it may not touch, which on a GPU would
    end the process's CUDA context with an illegal address."""
    buf = torch.full((PAD + t.numel() + PAD,), float("nan"), device=t.device, dtype=t.dtype)
    view = buf[PAD : PAD + t.numel()].view(t.shape)
    view.copy_(t)
    return view


def first_mismatch(expected, actual):
    """(index, expected, actual) of the first element that differs (NaN counts as different), or None."""
    bad = ~torch.isclose(actual, expected, rtol=1e-6, atol=1e-6, equal_nan=False)
    if not bool(bad.any()):
        return None
    i = int(bad.nonzero()[0][0])
    return i, float(expected.flatten()[i]), float(actual.flatten()[i])


# ------------------------------------------------------------------------------------------------------------------
# What the checks of several exercises share


def grade_add2_like(report, fn, sizes, tail_hint, bounds_hint):
    for dev in devices():
        failure, overwrite = None, None
        for n in sizes:
            gen = torch.Generator().manual_seed(n)
            a_cpu, b_cpu = torch.randn(n, generator=gen), torch.randn(n, generator=gen)
            a, abig = padded(n, dev, 1.0)
            b, bbig = padded(n, dev, 1.0)
            a.copy_(a_cpu)
            b.copy_(b_cpu)
            out, obig = padded(n, dev)
            fn(a, b, out)
            if dev == "cuda":
                torch.cuda.synchronize()
            m = first_mismatch((a_cpu + b_cpu).to(dev), out)
            if m and failure is None:
                failure = (n, m)
            if overwrite is None and not bool(torch.isnan(obig[n:]).all()):
                overwrite = (n, int((~torch.isnan(obig[n:])).nonzero()[0][0]) + n)
        if failure:
            n, (i, e, got) = failure
            report.add(
                f"matches a + b on {dev}",
                False,
                f"smallest failing n = {n}: element {i} should be {e:.6g}, got {got:.6g}",
                tail_hint,
            )
        else:
            report.add(f"matches a + b on {dev}", True, f"{len(sizes)} sizes from {sizes[0]} to {sizes[-1]}")
        if overwrite:
            n, i = overwrite
            report.add(
                f"writes nothing past the end on {dev}",
                False,
                f"with n = {n}, element {i} of the memory after the output was overwritten",
                bounds_hint,
            )
        else:
            report.add(f"writes nothing past the end on {dev}", True)


def calibrated_sleep_cycles(seconds):
    """GPU clock cycles that torch.cuda._sleep spins for `seconds`, measured with events on this GPU."""
    from kit.timing import device_time

    probe = 10_000_000
    t = device_time(lambda: torch.cuda._sleep(probe), flush_l2=False).median
    return int(probe * seconds / t)


# -- One GPU, several graders -----------------------------------------------------------------------------------------
# A class's grading (kit/grade.py --class) checks several students at once on one GPU, and a check that times the
# GPU (ex2's bandwidth, ex6's 2 ms kernel, ex9's speed) timed the other graders' kernels too: on the H200, 8 graders
# at once failed correct answers of ex6 and ex9. So the class's grading names a lock file ($LABKIT_GRADE_GPU_LOCK):
# each grader holds it shared while it checks an exercise, after building it (gpu_shared, in kit/grade.py: a build
# needs no GPU, so a timed part never waits for one), and a timed part holds it
# alone (gpu_alone). A turnstile file beside it keeps new exercises from starting while a timed part waits, so the
# wait is for the exercises in flight (seconds), never for a stream of new ones. The class's grading names the lock
# only for its second round, the exercises that time the GPU (kit/grade.py): the others, graded first, share the GPU
# freely. Without the variable (one student, `make check`, that first round) both are no-ops.

GPU_LOCK = "LABKIT_GRADE_GPU_LOCK"
ALONE_WAIT = 60.0  # seconds a timed part waits for the GPU alone; a hung grader holds it until its check limit (120 s)
_lock_files = {}


def gpu_lock_paths(lock):
    """The files of the GPU's lock named `lock`: the lock and its turnstile."""
    return Path(lock), Path(f"{lock}.turnstile")


def _gpu_lock_files():
    path = os.environ.get(GPU_LOCK)
    if not path:
        return None
    if path not in _lock_files:
        _lock_files[path] = tuple(os.open(p, os.O_RDWR | os.O_CREAT, 0o600) for p in gpu_lock_paths(path))
    return _lock_files[path]


@contextlib.contextmanager
def gpu_shared():
    """Around a grader's checks of one exercise: others may check theirs meanwhile, but not time the GPU."""
    files = _gpu_lock_files()
    if files is None:
        yield
        return
    lock, turnstile = files
    fcntl.flock(turnstile, fcntl.LOCK_SH)  # waits while a timed part waits or runs
    fcntl.flock(turnstile, fcntl.LOCK_UN)
    fcntl.flock(lock, fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


def _lock_by(fd, mode, deadline):
    """flock(fd, mode) if it can be had before the time `deadline` (time.monotonic()); True where it was."""
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


@contextlib.contextmanager
def gpu_alone():
    """Around a part of a check that times the GPU: yields True once no other grader is on the GPU, or False after
    ALONE_WAIT seconds without (the check then times anyway, and says so: `shared_note`). Every wait is bounded, as
    the check's own time limit runs meanwhile: a correct answer must not fail for another student's endless loop."""
    files = _gpu_lock_files()
    if files is None:
        yield True
        return
    lock, turnstile = files
    deadline = time.monotonic() + ALONE_WAIT
    # this grader's own shared hold goes first: kept while it waits for the turnstile, it would keep out the timed
    # part that holds the turnstile and waits for the GPU alone, and both would wait ALONE_WAIT (two graders timing
    # at once, the rule in a class's round of timed exercises: on the H200 it made that round take 7 minutes). So
    # whoever waits here holds nothing another waits for but the turnstile, held by one who needs only checks in
    # flight to end
    fcntl.flock(lock, fcntl.LOCK_UN)
    first = _lock_by(turnstile, fcntl.LOCK_EX, deadline)  # no new exercise starts now, nor another timed part
    alone = first and _lock_by(lock, fcntl.LOCK_EX, deadline)
    try:
        yield alone
    finally:
        fcntl.flock(lock, fcntl.LOCK_SH)  # back to gpu_shared's hold, for the rest of the exercise's checks
        if first:
            fcntl.flock(turnstile, fcntl.LOCK_UN)


def shared_note(alone):
    """What a timed check's detail adds where it could not have the GPU alone."""
    return "" if alone else f" (timed beside other graders' work: the GPU was not free in {ALONE_WAIT:g} s)"


# ------------------------------------------------------------------------------------------------------------------


def begin(ops, name, edit):
    """(a Report for exercise `name`, the student's op built and loaded, or None when it is not: the report says
    why)."""
    report = Report(name, edit)
    return report, load_op(ops, name, report)


def load_op(ops, name, report):
    """The student's op, compiled; a compile or load error is reported as one failed check."""
    try:
        fn = getattr(ops, name)
        fn.refresh()
        _note(name, None)
        return fn
    except (CompileError, LoadError) as e:
        report.add(
            "compiles", False, str(e).splitlines()[0] + "\n        " + "\n        ".join(str(e).splitlines()[1:])
        )
    except AttributeError as e:
        report.add("exists", False, str(e))
    return None
