"""The exercise grader: `check("ex1_add2_tail")` in a notebook cell, `make check` for all of them.

Each exercise is graded against PyTorch's own ops on awkward sizes and on every device this machine has; a failure
names the smallest failing input, the expected and actual values, and a hint. GPU-only checks say so where there is
no GPU. For an instructor:
  python -m kit.grade                               every exercise in ./kernels (the stubs fail: that is expected)
  python -m kit.grade --solutions                   the same with solutions/ laid over a copy (all must pass)
  python -m kit.grade --kernels alice/kernels --json alice.json      one student's copy of the kit
  python -m kit.grade --class submissions/ --json grades.json        every student folder under submissions/
"""
import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

import loader
from kit.compile_errors import CompileError, LoadError

GPU = torch.cuda.is_available()
PAD = 1024  # sentinel elements after every output: a kernel writing past n changes them
EXERCISES = ["ex1_add2_tail", "ex2_add2_vec4", "ex3_elu_backward", "ex4_device_guard", "bias_relu", "ex6_time_kernel"]
WHERE = {"ex1_add2_tail": "kernels/ex1_add2_tail/ex1_add2_tail.h", "ex2_add2_vec4": "kernels/ex2_add2_vec4/ex2_add2_vec4.h",
         "ex3_elu_backward": "kernels/ex3_elu_backward/ex3_elu_backward.h",
         "ex4_device_guard": "kernels/ex4_device_guard/ex4_device_guard.cpp", "bias_relu": "kernels/bias_relu/ (new)",
         "ex6_time_kernel": "exercises/ex6_time_kernel.py"}


@dataclass
class Result:
    check: str
    status: str  # "pass", "fail" or "skip"
    detail: str = ""
    hint: str = ""


@dataclass
class Report:
    exercise: str
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

    def skip(self, check, why):
        self.results.append(Result(check, "skip", why))

    def __str__(self):
        lines = [f"{self.exercise}  ({WHERE.get(self.exercise, '')})"]
        for r in self.results:
            lines.append(f"  {r.status.upper():4}  {r.check}" + (f": {r.detail}" if r.detail else ""))
            if r.hint:
                lines.append(f"        hint: {r.hint}")
        counts = {s: sum(r.status == s for r in self.results) for s in ("pass", "fail", "skip")}
        verdict = ("all checks pass" if self.passed else "not done yet" if self.failed else
                   "no check failed, but some need hardware this machine lacks")
        lines.append(f"  {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped: {verdict}")
        return "\n".join(lines)

    def to_dict(self):
        return {"exercise": self.exercise, "passed": self.passed, "failed": self.failed,
                "results": [asdict(r) for r in self.results]}


def devices():
    return ["cpu"] + (["cuda"] if GPU else [])


def _padded(n, device, fill=float("nan"), dtype=torch.float32):
    """An n-element view at the start of a buffer with PAD more elements, all set to `fill`."""
    big = torch.full((n + PAD,), fill, device=device, dtype=dtype)
    return big[:n], big


def _first_mismatch(expected, actual):
    """(index, expected, actual) of the first element that differs (NaN counts as different), or None."""
    bad = ~torch.isclose(actual, expected, rtol=1e-6, atol=1e-6, equal_nan=False)
    if not bool(bad.any()):
        return None
    i = int(bad.nonzero()[0][0])
    return i, float(expected.flatten()[i]), float(actual.flatten()[i])


# ------------------------------------------------------------------------------------------------------------------
# Exercises 1 and 2: add2 for any size, and with f4 loads

def _grade_add2_like(report, fn, sizes, tail_hint, bounds_hint):
    for dev in devices():
        failure, overwrite = None, None
        for n in sizes:
            gen = torch.Generator().manual_seed(n)
            a_cpu, b_cpu = torch.randn(n, generator=gen), torch.randn(n, generator=gen)
            a, abig = _padded(n, dev, 1.0)
            b, bbig = _padded(n, dev, 1.0)
            a.copy_(a_cpu)
            b.copy_(b_cpu)
            out, obig = _padded(n, dev)
            fn(a, b, out)
            if dev == "cuda":
                torch.cuda.synchronize()
            m = _first_mismatch((a_cpu + b_cpu).to(dev), out)
            if m and failure is None:
                failure = (n, m)
            if overwrite is None and not bool(torch.isnan(obig[n:]).all()):
                overwrite = (n, int((~torch.isnan(obig[n:])).nonzero()[0][0]) + n)
        if failure:
            n, (i, e, got) = failure
            report.add(f"matches a + b on {dev}", False,
                       f"smallest failing n = {n}: element {i} should be {e:.6g}, got {got:.6g}", tail_hint)
        else:
            report.add(f"matches a + b on {dev}", True, f"{len(sizes)} sizes from {sizes[0]} to {sizes[-1]}")
        if overwrite:
            n, i = overwrite
            report.add(f"writes nothing past the end on {dev}", False,
                       f"with n = {n}, element {i} of the memory after the output was overwritten", bounds_hint)
        else:
            report.add(f"writes nothing past the end on {dev}", True)


def grade_ex1_add2_tail(ops, kit_root):
    report = Report("ex1_add2_tail")
    op = _load(ops, "ex1_add2_tail", report)
    if op is None:
        return report
    _grade_add2_like(report, lambda a, b, out: op(a, b, out=out), [1, 3, 255, 256, 257, 1000, 1023, 1025, 4099],
                     "every thread whose i < n must write c[i] = a[i] + b[i]; is one of them skipped?",
                     "the last block has threads with i >= n: they must not write (compare i with n: < or <=?)")
    return report


def grade_ex2_add2_vec4(ops, kit_root):
    report = Report("ex2_add2_vec4")
    op = _load(ops, "ex2_add2_vec4", report)
    if op is None:
        return report
    _grade_add2_like(report, lambda a, b, out: op(a, b, out=out),
                     [1, 2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 4099, (1 << 20) + 3],
                     "a pack is whole when 4p + 4 <= n; the last pack holds the n % 4 leftover elements, one by one",
                     "the last pack may be partial: an f4 store there writes past n")
    if not GPU:
        report.skip("bandwidth against a copy", "needs a CUDA GPU: none here")
        return report
    from kit.timing import device_time

    def medians(n, **reps):  # seconds: our op, then a copy, on the same n floats
        a, b, out = (torch.randn(n, device="cuda") for _ in range(3))
        return device_time(lambda: op(a, b, out=out), **reps).median, device_time(lambda: out.copy_(a), **reps).median

    # A correct answer can still be hopelessly slow (a tail loop that runs from i to n makes the kernel quadratic:
    # minutes per call at 2^26). So first a few calls at 2^20, and 2^26 only if those are within reach of a copy.
    ours, copy = medians(1 << 20, warmup=0, reps=3)
    if ours > 20 * copy:
        report.add("bandwidth against a copy (n = 2^26)", False,
                   f"far too slow to measure at 2^26: at n = 2^20 one call takes {ours * 1e6:.0f} us, "
                   f"{ours / copy:.0f} times a copy's {copy * 1e6:.0f} us",
                   "does a thread loop over more than its own pack? only the last, partial pack needs a loop")
        return report
    n = 1 << 26
    ours, copy = medians(n)
    gbs, copy_gbs = 12 * n / ours / 1e9, 8 * n / copy / 1e9
    ratio = gbs / copy_gbs
    report.add("bandwidth against a copy (n = 2^26)", ratio >= 0.9,
               f"{gbs:.0f} GB/s, {ratio:.0%} of a copy's {copy_gbs:.0f} GB/s (bar: 90%)",
               "correct but slow: is every whole pack moved with one f4 load of a, one of b and one f4 store?")
    return report


# ------------------------------------------------------------------------------------------------------------------
# Exercise 3: ELU backward

def grade_ex3_elu_backward(ops, kit_root):
    report = Report("ex3_elu_backward")
    op = _load(ops, "ex3_elu_backward", report)
    if op is None:
        return report
    sizes = [1, 3, 255, 257, 1025, 4099]
    for dev in devices():
        for dtype in (torch.float32, torch.float64):
            failure = None
            for alpha in (1.0, 0.5, 2.0):
                for n in sizes:
                    gen = torch.Generator().manual_seed(n)
                    x = (torch.randn(n, generator=gen, dtype=torch.float64) * 3).to(dtype)
                    x[:: 7] = 0.0  # x == 0 exactly: which branch does it take?
                    x = x.to(dev).requires_grad_()
                    g = torch.randn(n, generator=gen, dtype=torch.float64).to(dtype).to(dev)
                    ours, = torch.autograd.grad(op(x, alpha), x, g)
                    xr = x.detach().clone().requires_grad_()
                    ref, = torch.autograd.grad(torch.nn.functional.elu(xr, alpha), xr, g)
                    m = _first_mismatch(ref, ours)
                    if m and failure is None:
                        failure = (n, alpha, m, float(x.detach().flatten()[m[0]]))
            name = f"gradient matches F.elu's on {dev}, {str(dtype).replace('torch.', '')}"
            if failure:
                n, alpha, (i, e, got), xv = failure
                report.add(name, False, f"smallest failing n = {n} (alpha = {alpha}): at x = {xv:.6g} the gradient "
                           f"should be {e:.6g}, got {got:.6g}",
                           "dy/dx is 1 for x > 0 and alpha * exp(x) for x <= 0 (x == 0 included); times grad_out")
            else:
                report.add(name, True, f"{len(sizes)} sizes, alpha 1, 0.5 and 2, x == 0 included")
    return report


# ------------------------------------------------------------------------------------------------------------------
# Exercise 4: the device guard

STREAM_CHECK = """
    import torch
    from loader import Ops
    op = Ops({kernels!r}, build_dir={build!r}).ex4_device_guard
    n = 1 << 20
    b = torch.ones(n, device="cuda")
    op(b, b); torch.cuda.synchronize()  # a first launch loads the kernel (lazy loading), which may wait for the
                                        # whole GPU and so hide a launch on the wrong stream below
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.zeros(n, device="cuda")
        torch.cuda._sleep(100_000_000)  # ~50 ms of the side stream's time: a is written only after it
        a.fill_(2.0)
        c = op(a, b)
    s.synchronize()
    report(float(c.min()))
"""

DEVICE_CHECK = """
    import torch
    from loader import Ops
    op = Ops({kernels!r}, build_dir={build!r}).ex4_device_guard
    a = torch.ones(1 << 20, device="cuda:1"); b = torch.full((1 << 20,), 2.0, device="cuda:1")
    torch.cuda.set_device(0)
    c = op(a, b)
    torch.cuda.synchronize(1); torch.cuda.synchronize(0)
    report([bool((c == 3).all()), str(c.device)])
"""


def grade_ex4_device_guard(ops, kit_root):
    from kit.devices import run_isolated

    report = Report("ex4_device_guard")
    op = _load(ops, "ex4_device_guard", report)
    if op is None:
        return report
    a, b = torch.randn(1000), torch.randn(1000)
    report.add("matches a + b on cpu", torch.equal(op(a, b), a + b))
    src = (ops._kernels / "ex4_device_guard" / "ex4_device_guard.cpp").read_text()
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", src[src.find("ex4_cuda_impl"):], flags=re.S)  # code, not comments
    guard = re.search(r"CUDAGuard\s+\w+\s*[\({]\s*(a|b)\.device\(\)", body) or \
        re.search(r"OptionalCUDAGuard\s+\w+\s*[\({]\s*device_of\(\s*(a|b)\s*\)", body)
    guard_hint = "const c10::cuda::CUDAGuard guard(a.device()); before allocating and launching"
    stream_hint = "launch on current_stream() (PyTorch's current stream of a's GPU), not on stream 0"
    if not GPU:
        stream = re.search(r"current_stream\(\)|getCurrentCUDAStream\(", body)
        report.add("launches on the current stream (read from the source: a GPU runs it for real)", bool(stream),
                   "" if stream else "the launch still passes stream 0", stream_hint)
        report.add("takes a device guard from an input (read from the source: a GPU runs it for real)", bool(guard),
                   "" if guard else "no CUDAGuard built from a.device() in ex4_cuda_impl", guard_hint)
        return report
    kernels, build = str(ops._kernels), str(ops._build_dir or loader.build_root())
    r = run_isolated(STREAM_CHECK.format(kernels=kernels, build=build))
    ok = r.result == 3.0
    report.add("runs on the caller's current stream", ok,
               "result ordered after the work queued before it" if ok else
               f"the kernel read a before the side stream wrote it (got {r.result}; {r.verdict})",
               stream_hint)
    if torch.cuda.device_count() >= 2:
        r = run_isolated(DEVICE_CHECK.format(kernels=kernels, build=build))
        ok = r.result is not None and r.result[0]
        report.add("runs on the inputs' GPU (data on cuda:1, cuda:0 current, in a child process)", ok,
                   "right result" if ok else f"{r.verdict}; result {r.result}",
                   "take a device guard from the input first: const c10::cuda::CUDAGuard guard(a.device());")
    else:
        src = (ops._kernels / "ex4_device_guard" / "ex4_device_guard.cpp").read_text()
        body = src[src.find("ex4_cuda_impl"):]
        guard = re.search(r"CUDAGuard\s+\w+\s*[\({]\s*(a|b)\.device\(\)", body) or \
            re.search(r"OptionalCUDAGuard\s+\w+\s*[\({]\s*device_of\(\s*(a|b)\s*\)", body)
        report.add("takes a device guard from an input (read from the source: running it needs two GPUs)",
                   bool(guard), "" if guard else "no CUDAGuard built from a.device() in ex4_cuda_impl",
                   "const c10::cuda::CUDAGuard guard(a.device()); before allocating and launching")
    return report


# ------------------------------------------------------------------------------------------------------------------
# Exercise 5: a new op from scratch

BAD_INPUTS = """
    import torch
    from loader import Ops
    op = Ops({kernels!r}, build_dir={build!r}).bias_relu
    out = []
    for x, bias in [(torch.randn(4, 5, device={dev!r}), torch.randn(4, device={dev!r})),
                    (torch.randn(20, device={dev!r}), torch.randn(20, device={dev!r})),
                    (torch.randint(0, 3, (4, 5), device={dev!r}), torch.randint(0, 3, (5,), device={dev!r}))]:
        try:
            op(x, bias)
            {sync}
            out.append("accepted")
        except (RuntimeError, ValueError, TypeError) as e:
            out.append(type(e).__name__)
    report(out)
"""


def grade_bias_relu(ops, kit_root):
    from kit.devices import run_isolated

    report = Report("bias_relu")
    if not (ops._kernels / "bias_relu" / "op.py").exists():
        report.add("kernels/bias_relu/ exists", False, "no folder kernels/bias_relu with an op.py",
                   "copy kernels/add2 to kernels/bias_relu, rename files and functions, and write "
                   "y[r, c] = max(x[r, c] + bias[c], 0) for x of shape [rows, cols], bias of shape [cols]")
        return report
    op = _load(ops, "bias_relu", report)
    if op is None:
        return report
    shapes = [(1, 1), (3, 5), (7, 1000), (1025, 33), (33, 1025), (40, 60)]
    for dev in devices():
        failure = None
        for rows, cols in shapes:
            gen = torch.Generator().manual_seed(rows * cols)
            if (rows, cols) == (40, 60):
                x = torch.randn(cols, rows, generator=gen).to(dev).t()  # a transposed view: not contiguous
            else:
                x = torch.randn(rows, cols, generator=gen).to(dev)
            bias = torch.randn(cols, generator=gen).to(dev)
            m = _first_mismatch(torch.relu(x + bias), op(x, bias))
            if m and failure is None:
                failure = (tuple(x.shape), x.is_contiguous(), m)
        if failure:
            shape, contig, (i, e, got) = failure
            report.add(f"matches relu(x + bias) on {dev}", False, f"smallest failing shape {shape}"
                       f"{'' if contig else ' (a transposed, non-contiguous x)'}: element {i} should be {e:.6g}, got {got:.6g}",
                       "bias is indexed by the column: i % cols for a contiguous x; make x contiguous first")
        else:
            report.add(f"matches relu(x + bias) on {dev}", True, f"{len(shapes)} shapes, a non-contiguous one too")
        r = run_isolated(BAD_INPUTS.format(kernels=str(ops._kernels), build=str(ops._build_dir or loader.build_root()),
                                           dev=dev, sync="torch.cuda.synchronize()" if dev == "cuda" else "pass"))
        ok = r.result is not None and "accepted" not in r.result
        report.add(f"clear errors on bad input on {dev} (wrong bias length, 1-D x, integer tensors)", ok,
                   "" if ok else (f"accepted: {r.result}" if r.result else r.verdict),
                   "TORCH_CHECK each argument in the binding, naming it: shape of bias, x.dim() == 2, dtype")
    return report


# ------------------------------------------------------------------------------------------------------------------
# Exercise 6: timing

def grade_ex6_time_kernel(ops, kit_root):
    report = Report("ex6_time_kernel")
    path = Path(kit_root) / "exercises" / "ex6_time_kernel.py"
    spec = importlib.util.spec_from_file_location("labkit_ex6", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - a student's file can raise anything
        report.add("exercises/ex6_time_kernel.py imports", False, f"{type(e).__name__}: {e}")
        return report
    if not GPU:
        try:
            mod.time_kernel(lambda: None, reps=1)
        except NotImplementedError:
            report.add("time_kernel is written", False, "it still raises NotImplementedError",
                       "see the TODO in exercises/ex6_time_kernel.py")
            return report
        except Exception:  # noqa: BLE001 - without a GPU, a correct answer fails in torch.cuda.synchronize()
            pass
        report.skip("measures a 2 ms GPU kernel within 15%", "needs a CUDA GPU: none here")
        return report
    from kit.timing import device_time

    cycles = _calibrated_sleep_cycles(2e-3)
    spin = lambda: torch.cuda._sleep(cycles)  # noqa: E731
    truth = device_time(spin, flush_l2=False).median
    try:
        got = float(mod.time_kernel(spin))
    except NotImplementedError:
        report.add("measures a 2 ms GPU kernel within 15%", False, "time_kernel is not written yet",
                   "see the TODO in exercises/ex6_time_kernel.py")
        return report
    ok = abs(got - truth) <= 0.15 * truth
    report.add("measures a 2 ms GPU kernel within 15%", ok,
               f"measured {got * 1e6:.0f} us; CUDA events say {truth * 1e6:.0f} us",
               "the launch returns at once: wait for the GPU (torch.cuda.synchronize()) before reading the clock, "
               "and before starting it")
    return report


def _calibrated_sleep_cycles(seconds):
    """GPU clock cycles that torch.cuda._sleep spins for `seconds`, measured with events on this GPU."""
    from kit.timing import device_time

    probe = 10_000_000
    t = device_time(lambda: torch.cuda._sleep(probe), flush_l2=False).median
    return int(probe * seconds / t)


# ------------------------------------------------------------------------------------------------------------------

GRADERS = {name: globals()[f"grade_{name}"] for name in EXERCISES}


def _load(ops, name, report):
    """The student's op, compiled; a compile or load error is reported as one failed check."""
    try:
        fn = getattr(ops, name)
        fn.refresh()
        return fn
    except (CompileError, LoadError) as e:
        report.add("compiles", False, str(e).splitlines()[0] + "\n        " + "\n        ".join(str(e).splitlines()[1:]))
    except AttributeError as e:
        report.add("exists", False, str(e))
    return None


_ops_cache = {}


def _ops_for(kernels_dir):
    """One Ops per kit folder for the whole process: the kit's own `ops`, or one building into <kit>/.build."""
    if kernels_dir == loader.KERNELS:
        return loader.ops
    if kernels_dir not in _ops_cache:
        _ops_cache[kernels_dir] = loader.Ops(kernels_dir, build_dir=kernels_dir.parent / ".build")
    return _ops_cache[kernels_dir]


def check(*names, kernels_dir=None, quiet=False):
    """Grade exercises (all if none named) and print a report for each; returns the reports."""
    kernels_dir = Path(kernels_dir or loader.KERNELS).resolve()
    ops = _ops_for(kernels_dir)
    reports = []
    for name in names or EXERCISES:
        if name not in GRADERS:
            raise ValueError(f"no exercise {name!r}; exercises: {', '.join(EXERCISES)}")
        report = GRADERS[name](ops, kernels_dir.parent)
        reports.append(report)
        if not quiet:
            print(report, flush=True)
    return reports if len(reports) > 1 else reports[0]


def with_solutions(dest):
    """A copy of the kit (kernels/, exercises/) at dest with solutions/ laid over it; returns its kernels folder."""
    dest = Path(dest)
    for part in ("kernels", "exercises"):
        shutil.copytree(loader.ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
    for src in (loader.ROOT / "solutions").rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts:
            rel = src.relative_to(loader.ROOT / "solutions")
            target = dest / ("exercises" if rel.parts[0] == "exercises" else "kernels") / \
                (Path(*rel.parts[1:]) if rel.parts[0] == "exercises" else rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest / "kernels"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kit.grade", description=__doc__.split("\n")[0])
    p.add_argument("exercises", nargs="*", help=f"default: all ({', '.join(EXERCISES)})")
    p.add_argument("--kernels", help="the kernels/ folder to grade (a student's copy of the kit)")
    p.add_argument("--solutions", action="store_true", help="grade solutions/ laid over a copy of the kit")
    p.add_argument("--class", dest="klass", help="a folder of student kits (each with kernels/): grade each")
    p.add_argument("--json", help="also write the results here, for a gradebook")
    args = p.parse_args(argv)
    if args.klass:
        return _grade_class(Path(args.klass), args.exercises, args.json)
    if args.solutions:
        tmp = tempfile.mkdtemp(prefix="labkit-solutions-")
        args.kernels = str(with_solutions(tmp))
    reports = check(*args.exercises, kernels_dir=args.kernels)
    reports = reports if isinstance(reports, list) else [reports]
    passed, failed = sum(r.passed for r in reports), sum(r.failed for r in reports)
    print(f"exercises: {passed} passed, {failed} failed, {len(reports) - passed - failed} not fully checkable here")
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n")
    return 1 if failed else 0


def _grade_class(folder, exercises, json_path):
    """Each student in a child process: one student's crashing kernel must not end everyone's grading."""
    book = {}
    for student in sorted(d for d in folder.iterdir() if (d / "kernels").is_dir()):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            r = subprocess.run([sys.executable, "-m", "kit.grade", *exercises, "--kernels", str(student / "kernels"),
                                "--json", f.name], capture_output=True, text=True, cwd=loader.ROOT)
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
