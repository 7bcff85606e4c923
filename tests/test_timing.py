"""The timing toolkit (kit/timing.py), the benchmark (bench/run.py) and notebook 04's recorder (kit/record_timing.py).

On the CPU: the statistics, bandwidth, the four host-timing modes (on a synchronous sleep, and on ToyStream, whose
queued work behaves like a GPU's), device_time's logic on a stand-in for torch.cuda, timelines, clear errors
without a GPU, and `bench/run.py --cpu` and `kit.record_timing --cpu` end to end.
On the GPU: a spin of known length (calibrated against the host clock, not against events) read by the event
timer within 3% and by the right host timer within launch overhead, and the wrong host timers reading what the
add2 tutorial (notebook 04) says they read.
"""

import importlib.util
import itertools
import json
import statistics
import subprocess
import sys
import time
import types
from contextlib import contextmanager

import matplotlib
import numpy as np
import pytest
import torch
from conftest import HAS_CUDA, ROOT

from kit import record_timing, timeline, timing
from kit.timing import NoGPUError, ToyStream, host_time

matplotlib.use("Agg")

# The tests that read GPU clocks to a few percent need the GPU to themselves (marked exclusive_gpu: make test and
# scripts/gpu_session.sh run them after the parallel run, alone); the rest run on the CPU, or on a fake CUDA
GPU_TIMED = (pytest.mark.cuda, pytest.mark.exclusive_gpu)


def gpu_timed(test):
    for mark in GPU_TIMED:
        test = mark(test)
    return test


def load_run_py():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------------------------
# Statistics and bandwidth


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 101])
def test_quantiles_match_numpy(n):
    values = list(np.random.default_rng(n).exponential(size=n))
    for q in (0, 0.25, 0.5, 0.75, 1):
        assert timing.quantile(values, q) == pytest.approx(np.percentile(values, 100 * q))


def test_summarize_keeps_every_time_in_order():
    t = timing.summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (t.median, t.q25, t.q75) == (3.0, 2.0, 4.0)
    assert t.times == (5.0, 1.0, 3.0, 2.0, 4.0) and t.reps == 5
    assert timing.Timing.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_summarize_needs_times():
    with pytest.raises(ValueError, match="no times"):
        timing.summarize([])
    with pytest.raises(ValueError, match="between 0 and 1"):
        timing.quantile([1.0], 1.5)


def test_bandwidth():
    assert timing.gbps(3e9, 1.0) == pytest.approx(3.0)
    assert timing.gbps(12 * 2**24, 68e-6) == pytest.approx(12 * 2**24 / 68e-6 / 1e9)
    t = timing.summarize([1e-3, 2e-3, 4e-3])
    low, high = t.gbps_band(1e6)
    assert low < t.gbps(1e6) < high  # the slow quartile gives the low bandwidth
    with pytest.raises(ValueError):
        timing.gbps(1, 0.0)


def test_fmt_time():
    assert [timing.fmt_time(s) for s in (521e-6, 68.23e-6, 1.25e-3, 2.0, 40e-9)] == [
        "521 us",
        "68.2 us",
        "1.25 ms",
        "2 s",
        "40 ns",
    ]


# ----------------------------------------------------------------------------------------------
# Host timing: the add2 tutorial's four cases

SLEEP = 5e-3


@pytest.mark.parametrize("sync", list(timing.SYNC_MODES))
def test_host_time_of_synchronous_work(sync):
    # CPU work has finished when the call returns, so every placement of the waits reads the same: the sleep
    t = host_time(lambda: time.sleep(SLEEP), sync, device="cpu", warmup=1, reps=5)
    assert SLEEP <= t.median < 2 * SLEEP  # one sleep (a wrong wait would read none, or two)
    assert t.reps == 5


@pytest.mark.parametrize(
    "sync, expected",
    [
        # warm-up (2 calls, no wait after it, as in the add2 tutorial), 2 timed calls, then the final wait outside the timing
        ("both", "S F F | S F S | S F S | S"),
        ("before", "S F F | S F | S F | S"),
        ("after", "S F F | F S | F S | S"),
        ("none", "S F F | F | F | S"),
    ],
)
def test_host_time_waits_where_the_mode_says(sync, expected):
    calls = []
    host_time(lambda: calls.append("F"), sync, warmup=2, reps=2, synchronize=lambda: calls.append("S"))
    assert " ".join(calls) == expected.replace("| ", "")


def test_host_time_rejects_bad_arguments():
    with pytest.raises(ValueError, match="sync must be one of"):
        host_time(lambda: None, "sometimes", device="cpu")
    with pytest.raises(ValueError, match="reps must be at least 1"):
        host_time(lambda: None, device="cpu", reps=0)


WORK = 20e-3  # each toy kernel: long against the toy launch (0.1 ms) and the sleep's jitter


@pytest.fixture
def toy():
    return ToyStream()


def test_toy_four_cases_read_what_the_seed_says(toy):
    def case(sync):
        return host_time(lambda: toy.launch(WORK), sync, warmup=3, reps=5, synchronize=toy.synchronize)

    both, before, after, none = (case(s) for s in ("both", "before", "after", "none"))
    assert WORK <= both.median < WORK + 10e-3  # launch + kernel + sync
    assert before.median < WORK / 4 and none.median < WORK / 4  # the launch alone
    assert after.times[0] >= 3 * WORK  # the first timed call also waits for the 3 queued warm-up kernels
    assert WORK <= statistics.median(after.times[1:]) < WORK + 10e-3  # then each waits for its own only


def test_toy_timeline_shows_which_kernels_each_timer_covers(toy):
    def spans(sync):
        toy.spans.clear()
        host_time(lambda: toy.launch(WORK), sync, warmup=3, reps=3, synchronize=toy.synchronize, spans=toy.spans)
        return timeline.rebase(toy.spans)

    assert timeline.kernels_inside(spans("both")) == [1, 1, 1]
    assert timeline.kernels_inside(spans("before")) == [0, 0, 0]
    first, *rest = timeline.kernels_inside(spans("after"))
    assert first >= 2 and rest == [1, 1]  # the queued warm-up kernels, and its own
    s = spans("none")
    assert timeline.kernels_inside(s) == [0, 0, 0]
    assert {row for row, *_ in s} == {"timed (host)", "launch (host)", "sync (host)", "kernel (GPU)"}
    ax = timeline.draw_timeline(s, title="none")
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "timed (host)",
        "launch (host)",
        "sync (host)",
        "kernel (GPU)",
    ]


# ----------------------------------------------------------------------------------------------
# device_time's logic, on a stand-in for torch.cuda (the real thing is tested on the GPU below)


class FakeCuda:
    """Just enough of torch.cuda for device_time to run on the CPU. The "GPU" does each piece of work at once,
    on the host, so an event's timestamp is the host clock when it is recorded, and a spin is a sleep. Every
    call is logged, so a test can check what was queued, in which order and on which stream."""

    RATE = 1e9  # cycles per second of the fake spin clock

    def __init__(self):
        self.log = []
        self.current = 0

    def install(self, monkeypatch):
        for name in ("is_available", "current_device", "device", "current_stream", "synchronize", "Event", "_sleep"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))
        monkeypatch.setattr(timing, "_spin_rates", {})
        monkeypatch.setattr(timing, "CALIBRATION_CYCLES", 20_000_000)  # 20 ms of fake spin, not 100
        monkeypatch.setattr(timing, "l2_flush_buffer", lambda dev: self.FlushBuffer(self.log))

    def is_available(self):
        return True

    def current_device(self):
        return self.current

    @contextmanager
    def device(self, dev):
        old, self.current = self.current, torch.device(dev).index
        self.log.append(("device", self.current))
        try:
            yield
        finally:
            self.current = old

    def current_stream(self, dev=None):
        return f"stream of cuda:{self.current if dev is None else torch.device(dev).index}"

    def synchronize(self, dev=None):
        self.log.append(("sync",))

    def _sleep(self, cycles):
        self.log.append(("spin", self.current))
        time.sleep(cycles / self.RATE)

    def Event(self, enable_timing=False):  # noqa: N802 (torch's name)
        fake = self

        class Event:
            def record(self, stream):
                fake.log.append(("record", stream))
                self.t = time.perf_counter()

            def elapsed_time(self, end):
                return (end.t - self.t) * 1e3

            def synchronize(self):
                pass

        return Event()

    class FlushBuffer:
        def __init__(self, log):
            self.log = log

        def zero_(self):
            self.log.append(("flush",))


@pytest.fixture
def fake_cuda(monkeypatch):
    fake = FakeCuda()
    fake.install(monkeypatch)
    return fake


def test_spin_rate_is_calibrated_by_the_host_clock(fake_cuda, monkeypatch):
    """spin_rate divides the cycles of a spin by the host clock's time around it. Here the fake spin moves a host clock
    of its own on by cycles / RATE, so the arithmetic is checked exactly, whatever else the machine does: a real
    sleep of 20 ms overshot by 13% under the suite's load on 2 cores."""
    clock = [100.0]

    def spin(cycles):
        clock[0] += cycles / FakeCuda.RATE

    monkeypatch.setattr(torch.cuda, "_sleep", spin)
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    assert timing.spin_rate(0) == pytest.approx(FakeCuda.RATE, rel=1e-9)


def test_device_time_brackets_only_fn_on_the_devices_stream(fake_cuda):
    def fn():
        fake_cuda.log.append(("fn",))
        time.sleep(2e-3)

    t = timing.device_time(fn, device="cuda:1", warmup=2, reps=5)
    assert t.reps == 5
    assert 2e-3 <= t.median < 5e-3  # fn alone: the flush and the spin (about 4 ms here) stay outside the pair
    assert ("device", 1) in fake_cuda.log
    assert [e for e in fake_cuda.log if e[0] == "fn"] == [("fn",)] * (1 + 5 + 2 + 5)  # first, trial, warm-up, timed
    rep = [("flush",), ("spin", 1), ("record", "stream of cuda:1"), ("fn",), ("record", "stream of cuda:1")]
    timed = fake_cuda.log[-5 * len(rep) :]
    assert timed == rep * 5


def test_device_time_without_flush_or_backlog_queues_neither(fake_cuda):
    timing.device_time(lambda: None, device=0, flush_l2=False, backlog=False, warmup=1, reps=3)
    assert not [e for e in fake_cuda.log if e[0] in ("flush", "spin")]


def test_device_time_sizes_its_runs_from_the_budget(fake_cuda):
    t = timing.device_time(lambda: time.sleep(1e-3), device=0, flush_l2=False, backlog=False, budget=0.03)
    assert 10 <= t.reps <= 30  # about budget / 1 ms, and never fewer than 10
    t = timing.device_time(lambda: time.sleep(1e-3), device=0, flush_l2=False, backlog=False, budget=1e-4)
    assert t.reps == 10


def test_side_by_side_takes_the_callables_in_turn(fake_cuda):
    """Each round times every callable once and the rounds' repetitions are pooled, so a slow spell of a shared GPU
    (a class on one server) lands on all of them, not on whichever was being timed just then."""
    order = []

    def sleeper(name, seconds):
        def fn():
            order.append(name)
            time.sleep(seconds)

        return fn

    t = timing.side_by_side(
        {"a": sleeper("a", 1e-3), "b": sleeper("b", 3e-3)},
        device=0,
        rounds=3,
        flush_l2=False,
        backlog=False,
        warmup=0,
        reps=4,
    )
    assert t["a"].reps == t["b"].reps == 3 * 4
    assert [name for name, _ in itertools.groupby(order)] == ["a", "b"] * 3  # a's calls, then b's, three times
    assert 1e-3 <= t["a"].median < t["b"].median


# ----------------------------------------------------------------------------------------------
# Everything that can run on the CPU does; the GPU-only parts say why they cannot


def test_benchmark_on_the_cpu_uses_the_host_timer():
    t = timing.benchmark(lambda: time.sleep(1e-3), "cpu", budget=0.02)
    assert 5 <= t.reps <= 20 and 1e-3 <= t.median < 4e-3  # about budget / 1 ms repetitions, at least 5


def test_copy_counts_the_bytes_read_and_written(monkeypatch):
    copied = []

    def one_ms(fn, device, **kwargs):  # stands in for the timer: runs the copy once, says it took 1 ms
        copied.append(fn())
        return timing.summarize([1e-3])

    monkeypatch.setattr(timing, "benchmark", one_ms)
    assert timing.copy_ceiling("cpu", 1000) == pytest.approx(1000 / 1e-3 / 1e9)  # 500 read + 500 written, in 1 ms
    assert copied[0].numel() == 500 and copied[0].dtype == torch.uint8


def test_device_time_refuses_a_cpu_device():
    with pytest.raises(ValueError, match="time CPU work with host_time"):
        timing.device_time(lambda: None, device="cpu")


@pytest.mark.skipif(HAS_CUDA, reason="checks the errors of a machine without a GPU")
@pytest.mark.parametrize(
    "call",
    [
        lambda: timing.device_time(lambda: None),
        lambda: timing.device_time(lambda: None, device="cuda:0"),
        lambda: timing.spin_rate(),
        lambda: timing.spin(1e-3),
        lambda: timing.l2_flush_buffer(),
        lambda: timing.time_copy(1000, "cuda"),
        lambda: host_time(lambda: None, device="cuda"),
    ],
    ids=["device_time", "device_time(cuda:0)", "spin_rate", "spin", "l2_flush_buffer", "time_copy", "host_time"],
)
def test_gpu_only_functions_say_they_need_a_gpu(call):
    with pytest.raises(NoGPUError, match="needs a CUDA GPU.*torch.cuda.is_available\\(\\) is False"):
        call()


def test_spans_from_a_gpu_trace():
    # a trace as torch.profiler exports it, times in microseconds; the profiler's own work before and after
    # host_time's run is left out
    events = [
        ("user_annotation", "host_time", 100, 400),
        ("user_annotation", "warm-up", 101, 10),
        ("user_annotation", "timed #0", 120, 200),
        ("cuda_runtime", "cudaLaunchKernel", 121, 5),
        ("cuda_runtime", "cudaDeviceSynchronize", 126, 190),
        ("kernel", "add2_vec_kernel", 130, 180),
        ("cpu_op", "labkit::add2_out", 120, 8),
        ("cuda_runtime", "cudaDeviceSynchronize", 10, 5),
        ("kernel", "profiler's own", 600, 5),
    ]
    trace = {
        "traceEvents": [{"ph": "X", "cat": c, "name": n, "ts": ts, "dur": d} for c, n, ts, d in events]
        + [{"ph": "M", "name": "process_name"}]
    }
    spans = timeline.spans_from_trace(trace)
    assert [(row, label) for row, _, _, label in spans] == [
        ("timed (host)", "warm-up"),
        ("timed (host)", "timed #0"),
        ("launch (host)", "cudaLaunchKernel"),
        ("sync (host)", "cudaDeviceSynchronize"),
        ("kernel (GPU)", "add2_vec_kernel"),
    ]
    assert spans[4][1:3] == pytest.approx([30e-6, 210e-6])  # seconds from host_time's start
    assert timeline.kernels_inside(spans) == [1]


def test_profile_timeline_of_cpu_work():
    spans = timeline.profile_timeline(lambda: time.sleep(SLEEP), "both", device="cpu", warmup=1, reps=3)
    timed = [s for s in spans if s[0] == "timed (host)" and s[3].startswith("timed")]
    assert len(timed) == 3
    assert all(SLEEP <= end - start < 2 * SLEEP for _, start, end, _ in timed)  # one sleep each, give or take noise
    assert [s[3] for s in spans if s[0] == "timed (host)"][0] == "warm-up"


# ----------------------------------------------------------------------------------------------
# bench/run.py


def test_bench_cpu_quick_writes_json_table_and_plots(tmp_path):
    r = subprocess.run(
        [sys.executable, "bench/run.py", "--cpu", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads((tmp_path / "bench.json").read_text())
    run = load_run_py()
    assert result["kind"] == "cpu" and result["sizes"] == run.CPU_QUICK and result["torch"] == torch.__version__
    found = {(row["dtype"], row["n"], row["impl"]) for row in result["rows"] if row["op"] == "add2"}
    assert found == {(d, n, i) for d in ("float32", "bfloat16") for n in run.CPU_QUICK for i in ("ours", "torch")}
    assert {c["nbytes"] for c in result["copy"]} == {row["nbytes"] for row in result["rows"]}
    for row in result["rows"]:
        assert row["q25_s"] <= row["median_s"] <= row["q75_s"]
        assert row["gbps"] == pytest.approx(row["nbytes"] / row["median_s"] / 1e9)
    md = (tmp_path / "bench.md").read_text()
    assert "| op | pass | dtype | n | ours GB/s | torch GB/s | copy GB/s | ours/torch | ours % of copy |" in md
    assert "**not measured** add2 forward float32, n >= 2^24: ours/torch >= 0.97" in md  # a GPU bar, on the CPU
    assert (tmp_path / "add2-forward-float32.png").stat().st_size > 0
    assert (tmp_path / "add2-forward-bfloat16.png").stat().st_size > 0


FAKE_BENCH = """
import time
import torch

BARS = [{"op": "fake", "pass_": "x", "dtype": torch.float32, "min_n": 0, "impl": "ours", "vs": "torch",
         "at_least": at_least, "device": "cpu"} for at_least in (1.5, 3)]  # pass_ or pass: both are understood

def run(bench):
    for n in bench.sizes:
        bench.measure("fake", "x", torch.float32, n, "ours", lambda: time.sleep(0.001), 10**6)
        bench.measure("fake", "x", torch.float32, n, "torch", lambda: time.sleep(0.002), 10**6)
    # a compute-bound op: TFLOP/s from flops, no copy beside it, a peak from bench.extra on its plot
    bench.measure("fakemm", "square", torch.float32, 64, "ours", lambda: time.sleep(0.001), 10**3, flops=2 * 10**9)
    bench.extra["fakemm"] = {"peak_tflops": {"float32": 5.0}}
"""


def test_bench_contract_with_a_module_of_its_own(tmp_path):
    # what a bench_<op>.py relies on: run(bench) is called with sizes, device and measure; BARS are judged;
    # a module that fails is reported and the others still give their results
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "bench_fake.py").write_text(FAKE_BENCH)
    (folder / "bench_broken.py").write_text("def run(bench):\n    raise RuntimeError('broken on purpose')\n")
    run = load_run_py()
    rc = run.main(["--cpu", "--quick", "--out", str(tmp_path / "out")], bench_dir=folder)
    assert rc == 1  # because of bench_broken
    result = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert sorted({r["n"] for r in result["rows"] if r["op"] == "fake"}) == run.CPU_QUICK
    assert {(r["op"], r["dtype"], r["impl"]) for r in result["rows"] if r["op"] == "fake"} == {
        ("fake", "float32", "ours"),
        ("fake", "float32", "torch"),
    }
    [mm] = [r for r in result["rows"] if r["op"] == "fakemm"]
    assert 0.5 < mm["tflops"] <= 2 and mm["tflops"] == pytest.approx(2e9 / mm["median_s"] / 1e12)  # 2 GFLOP in >= 1 ms
    assert 10**3 not in {c["nbytes"] for c in result["copy"]}  # no copy for a compute-bound row
    assert result["fakemm"] == {"peak_tflops": {"float32": 5.0}}
    assert (tmp_path / "out" / "fakemm-square-float32.png").stat().st_size > 0
    assert [b["status"] for b in result["bars"]] == ["PASS", "FAIL"]  # ours is about 2x torch: >= 1.5, not >= 3
    assert "broken on purpose" in result["errors"][0]["error"]
    md = (tmp_path / "out" / "bench.md").read_text()
    assert "**PASS** fake x float32" in md and "**FAIL** fake x float32" in md and "bench_broken.py" in md
    assert (
        "| op | pass | dtype | n | ours TFLOP/s | torch TFLOP/s |" in md and "| fakemm | square | float32 | 64 |" in md
    )


def test_evaluate_bars():
    run = load_run_py()
    bar = {
        "op": "add2",
        "pass": "forward",
        "dtype": "float32",
        "min_n": 1 << 24,
        "impl": "ours",
        "vs": "torch",
        "at_least": 0.97,
    }

    def rows(ratios):
        out = []
        for n, ratio in ratios.items():
            out += [
                {"op": "add2", "pass": "forward", "dtype": "float32", "n": n, "impl": "torch", "gbps": 100.0},
                {"op": "add2", "pass": "forward", "dtype": "float32", "n": n, "impl": "ours", "gbps": 100 * ratio},
            ]
        return out

    [(_, status, detail)] = run.evaluate_bars(rows({1 << 20: 0.5, 1 << 24: 0.99, 1 << 26: 0.98}), [bar], "cuda")
    assert status == "PASS" and "0.980 at n=2^26" in detail  # n = 2^20 is below the bar's sizes
    [(_, status, detail)] = run.evaluate_bars(rows({1 << 24: 0.99, 1 << 28: 0.96}), [bar], "cuda")
    assert status == "FAIL" and "0.960 at n=2^28" in detail
    [(_, status, _)] = run.evaluate_bars(rows({1 << 20: 1.0}), [bar], "cuda")
    assert status == "not measured"
    [(_, status, _)] = run.evaluate_bars(rows({1 << 24: 1.0}), [bar], "cpu")
    assert status == "not measured"
    # against a copy of the same bytes: the ceiling of a memory-bound kernel
    to_copy = {**bar, "vs": "copy"}
    measured = [{**r, "nbytes": 12 * r["n"]} for r in rows({1 << 24: 0.99, 1 << 26: 0.99})]
    copies = [{"nbytes": 12 << 24, "gbps": 100.0}, {"nbytes": 12 << 26, "gbps": 110.0}]
    [(_, status, detail)] = run.evaluate_bars(measured, [to_copy], "cuda", copies)
    assert status == "FAIL" and "0.900 at n=2^26" in detail  # ours moves 99 GB/s there, a copy 110
    [(_, status, _)] = run.evaluate_bars(measured, [to_copy], "cuda")
    assert status == "not measured"  # no copies measured
    # max_n: one size only (matmul's bars are at 4096^3)
    at_one = {**bar, "min_n": 1 << 24, "max_n": 1 << 24}
    [(_, status, detail)] = run.evaluate_bars(rows({1 << 24: 0.99, 1 << 26: 0.5}), [at_one], "cuda")
    assert status == "PASS" and "0.990 at n=2^24 over 1 sizes" in detail
    assert "n = 2^24:" in run.bar_text(at_one)


@pytest.mark.parametrize(
    "sms, ghz, cc, float32, bfloat16",
    [
        (108, 1.41, (8, 0), 19.5, 312),  # A100 SXM: NVIDIA's datasheet, float32 and dense bfloat16 TFLOP/s
        (132, 1.98, (9, 0), 67, 989),  # H100 / H200 SXM (bfloat16 quoted at a lower clock than the boost: hence >=)
    ],
)
def test_matmul_peaks_match_the_datasheets(sms, ghz, cc, float32, bfloat16):
    load_run_py()  # puts bench/ on the path
    bench_matmul = importlib.import_module("bench_matmul")
    props = types.SimpleNamespace(major=cc[0], minor=cc[1], multi_processor_count=sms, clock_rate=int(ghz * 1e6))
    peaks = bench_matmul.peaks(props)
    assert peaks["float32"] == pytest.approx(float32, rel=0.01)
    assert 0.99 * bfloat16 <= peaks["bfloat16"] <= 1.1 * bfloat16
    assert bench_matmul.peaks(
        types.SimpleNamespace(major=7, minor=5, multi_processor_count=40, clock_rate=1_590_000)
    ) == {"float32": None, "bfloat16": None}


@pytest.mark.skipif(HAS_CUDA, reason="checks what happens on a machine without a GPU")
def test_bench_without_a_gpu_says_so_and_exits_0(capsys, tmp_path):
    """No bandwidths to measure; what a call costs on the CPU is measured all the same, against PyTorch's ops."""
    assert load_run_py().main(["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no CUDA GPU" in out
    calls = json.loads((tmp_path / "calls.json").read_text())["calls"]
    assert {(r["op"], r["grad"]) for r in calls} == {
        (op, grad) for op in ("add2", "elu", "sum", "matmul", "roi_align") for grad in (False, True)
    } | {("nms", False)}  # roi_align and nms against torchvision's ops (requirements.txt)
    for r in calls:
        assert set(r["host_us"]) == {"ops", "registered", "torch"} and all(us > 0 for us in r["host_us"].values())
        assert f"per call, {r['op']}" in out and r["status"] in out


# ----------------------------------------------------------------------------------------------
# kit/record_timing.py


@pytest.fixture(scope="module")
def cpu_record(tmp_path_factory):
    out = tmp_path_factory.mktemp("record")
    assert record_timing.main(["--cpu", "--quick", "--out", str(out)]) == 0
    return json.loads((out / "timing.json").read_text())


def test_record_on_the_cpu_runs_what_can_run(cpu_record):
    assert cpu_record["kind"] == "cpu" and cpu_record["torch"] == torch.__version__
    assert cpu_record["events_vs_kernel"] is None and cpu_record["cache_effect"] is None  # GPU only
    assert set(cpu_record["four_cases"]["cases"]) == set(timing.SYNC_MODES)
    assert all(len(t) == cpu_record["four_cases"]["reps"] for t in cpu_record["four_cases"]["cases"].values())
    for spans in cpu_record["timelines"]["cases"].values():
        assert len([s for s in spans if s[3].startswith("timed #")]) == cpu_record["timelines"]["reps"]
    cold = cpu_record["cold_start"]["ops.add2"]
    assert cold[0] > 10 * cold[2]  # a fresh process loads the op's library on the first call
    assert cpu_record["copy_ceiling"]["gbps"] > 0 and cpu_record["errors"] == {}
    assert "four cases" in record_timing.summary(cpu_record)


def test_record_plots_draw(cpu_record):
    ax = record_timing.plot_four_cases(cpu_record["four_cases"])
    assert len(ax.patches) == 4  # one bar per case
    ax = record_timing.plot_first_iteration(cpu_record["first_iteration"])
    assert len(ax.lines) == len(cpu_record["first_iteration"]["runs"])
    fig = record_timing.draw_four_timelines(cpu_record["timelines"])
    assert [a.get_title(loc="left").split(";")[0] for a in fig.axes] == list(timing.SYNC_MODES)
    t = cpu_record["timers"]
    ax = record_timing.plot_timings({"host": t["host"], "Timer": t["torch_timer"], "do_bench": t["do_bench"]})
    assert [x.get_text() for x in ax.get_yticklabels()] == ["host", "Timer"]  # do_bench is None on the CPU


@pytest.mark.skipif(HAS_CUDA, reason="on a GPU, result() measures live")
def test_result_reads_the_newest_recorded_gpu_result(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    never = lambda: pytest.fail("measured without a GPU")  # noqa: E731
    assert record_timing.result("four_cases", never) is None
    assert "no recorded GPU result is shipped" in capsys.readouterr().out
    for date, value in (("2026-01-01", "old"), ("2026-02-01", "new")):
        (tmp_path / f"{date}-nvidia-h200").mkdir()
        (tmp_path / f"{date}-nvidia-h200" / "timing.json").write_text(
            json.dumps({"kind": "cuda", "device": "NVIDIA H200", "date": date, "torch": "2.11", "four_cases": value})
        )
    (tmp_path / "2026-03-01-cpu").mkdir()  # a CPU record is never shown as a GPU result
    (tmp_path / "2026-03-01-cpu" / "timing.json").write_text(json.dumps({"kind": "cpu", "four_cases": "cpu"}))
    assert record_timing.result("four_cases", never) == "new"
    assert "recorded on NVIDIA H200 on 2026-02-01" in capsys.readouterr().out


@pytest.mark.skipif(HAS_CUDA, reason="checks what happens on a machine without a GPU")
def test_record_without_a_gpu_says_so_and_exits_0(capsys):
    assert record_timing.main([]) == 0
    assert "no CUDA GPU" in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------
# On the GPU: the timers against a spin of known length

SPIN = 200e-6  # long enough that the microsecond or two an event pair adds around any kernel is under 1%


@pytest.fixture
def spin_fn():
    # cycles for SPIN seconds at the rate spin_rate measured with the host clock around a 50 ms spin: the
    # known length owes nothing to CUDA events, so checking events against it is not circular
    cycles = int(SPIN * timing.spin_rate())
    return lambda: torch.cuda._sleep(cycles)


@gpu_timed
def test_event_timer_reads_a_known_spin_within_3_percent(spin_fn):
    t = timing.device_time(spin_fn)
    assert abs(t.median / SPIN - 1) < 0.03, str(t)


@gpu_timed
def test_event_timer_times_the_current_stream(spin_fn):
    # the spin runs on a side stream; events recorded on any other stream would read about zero
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = timing.device_time(spin_fn)
    assert abs(t.median / SPIN - 1) < 0.03, str(t)


@pytest.mark.gpu2
@pytest.mark.exclusive_gpu
def test_event_timer_times_the_device_it_is_given():
    cycles = int(SPIN * timing.spin_rate("cuda:1"))

    def spin_on_gpu1():
        with torch.cuda.device(1):
            torch.cuda._sleep(cycles)

    with torch.cuda.device(0):  # events on GPU 0 would not see GPU 1's spin at all
        t = timing.device_time(spin_on_gpu1, device="cuda:1")
    assert abs(t.median / SPIN - 1) < 0.03, str(t)


LAUNCH_OVERHEAD = 100e-6  # launch + synchronize: what a right host timer may add to the kernel


@gpu_timed
def test_host_timer_cases_read_what_the_seed_says(spin_fn):
    both = host_time(spin_fn, "both", warmup=10, reps=10)
    assert 0.97 * SPIN <= both.median < SPIN + LAUNCH_OVERHEAD, str(both)
    for wrong in ("before", "none"):  # no wait after the call: the launch alone, far below the kernel
        t = host_time(spin_fn, wrong, warmup=10, reps=10)
        assert t.median < SPIN / 4, (wrong, str(t))
    after = host_time(spin_fn, "after", warmup=10, reps=10)
    assert after.times[0] > 5 * SPIN, str(after)  # the first call also waits for the 10 queued warm-up spins
    rest = statistics.median(after.times[1:])  # then each call waits for its own spin only
    assert 0.97 * SPIN <= rest < SPIN + LAUNCH_OVERHEAD, str(after)


@gpu_timed
def test_timeline_shows_which_kernels_each_timer_covers(spin_fn):
    spans = timeline.profile_timeline(spin_fn, "both", warmup=2, reps=3)
    kernels = [s for s in spans if s[0] == "kernel (GPU)"]
    assert len(kernels) == 5  # 2 warm-up + 3 timed
    assert all(abs((end - start) / SPIN - 1) < 0.03 for _, start, end, _ in kernels), kernels
    assert timeline.kernels_inside(spans) == [1, 1, 1]
    assert {"launch (host)", "sync (host)"} <= {s[0] for s in spans}
    assert timeline.kernels_inside(timeline.profile_timeline(spin_fn, "before", warmup=2, reps=3)) == [0, 0, 0]


@pytest.mark.cuda  # not exclusive: it checks what the bench writes, and judges no bar (bench/run.py's exit code)
def test_bench_gpu_quick(tmp_path):
    r = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--only", "add2", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["kind"] == "cuda"
    assert {row["impl"] for row in result["rows"] if row["dtype"] == "float32"} == {"ours", "torch", "seed"}
    # add2's bars (against torch.add, and a copy in two dtypes) are judged at 2^24, not asserted here
    assert len(result["bars"]) == 3 and {b["status"] for b in result["bars"]} <= {"PASS", "FAIL"}
