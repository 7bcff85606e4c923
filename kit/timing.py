"""Sync-correct timing for the kit: what every notebook and `make bench` measure with (kit/timeline.py draws a
timed run, kit/plots.py draws rates against size).

A CUDA launch returns before the kernel runs, so a host clock read right after it times the launch, not the
kernel. This module gives the two right ways to time GPU work, and the wrong ways too, so notebook 04 can show
what each one reads:

- host_time(fn, sync=...): the timing loop of the Chinese add2 tutorial the lessons start from (warm-up, then host
  clock around each call), with its four synchronisation choices: "both" (right), "before", "after", "none". Also the right way to time CPU work.
- device_time(fn): CUDA events, timestamps the GPU itself writes in stream order, around each repetition; a
  warm-up; many repetitions; median and quartiles; an optional L2 flush before each repetition; on the device you
  name and on its current stream. benchmark(fn) picks device_time on a GPU and host_time on the CPU.
- gbps(), time_copy(): bandwidth from the bytes an op must move, and the machine's ceiling: a device-to-device
  copy of the same number of bytes (bytes read plus bytes written).
- ToyStream: a pretend GPU (a worker thread that runs queued work in order) so the four cases can be seen
  on a machine without one.

How it relates to what PyTorch and Triton ship:
- torch.cuda.Event is what device_time is made of; it adds the loop, the flush, the backlog and the statistics.
- triton.testing.do_bench follows the same recipe (events around each repetition, a buffer zeroed before each to
  flush L2, median or quantiles). device_time differs in three ways: it takes the device explicitly (do_bench uses
  the current one), sizes the flush buffer from the GPU's own L2 (do_bench zeroes a fixed 256 MB), and queues a
  short spin before each repetition so the GPU never waits for the host inside an event pair (do_bench relies on
  its flush for that, and has nothing to keep the GPU busy when the flush is small or absent).
- torch.utils.benchmark.Timer reads the host clock around blocks of many back-to-back calls and synchronizes at
  the ends of each block: a mean per call over a block, with the cache warm, and it sets one CPU thread by
  default. Good for CPU code and for comparing Python overheads; it cannot show one call's time or a flushed cache.
"""

import functools
import queue
import statistics
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch

SYNC_MODES = {
    "both": "synchronize before and after: launch + kernel + sync (the right way)",
    "before": "synchronize before only: the launch alone",
    "after": "synchronize after only: right, except that the first call also waits for the warm-up",
    "none": "no synchronize: the launch alone",
}


class NoGPUError(RuntimeError):
    """A GPU-only function was called on a machine without a CUDA GPU."""


# ----------------------------------------------------------------------------------------------
# Statistics and bandwidth


@dataclass(frozen=True)
class Timing:
    """What a timer measured: median and quartiles of the repetitions, and every repetition, all in seconds."""

    median: float
    q25: float
    q75: float
    times: tuple = ()

    @property
    def reps(self):
        return len(self.times)

    def gbps(self, nbytes):
        """Bandwidth at the median time, in GB/s (10^9 bytes per second, as memory datasheets count)."""
        return gbps(nbytes, self.median)

    def gbps_band(self, nbytes):
        """Bandwidth at the slow and the fast quartile: (low, high) GB/s."""
        return gbps(nbytes, self.q75), gbps(nbytes, self.q25)

    def to_dict(self, times=True):
        d = {"median": self.median, "q25": self.q25, "q75": self.q75}
        return {**d, "times": list(self.times)} if times else d

    @classmethod
    def from_dict(cls, d):
        return cls(d["median"], d["q25"], d["q75"], tuple(d.get("times", ())))

    def __str__(self):
        return f"{fmt_time(self.median)} (quartiles {fmt_time(self.q25)} to {fmt_time(self.q75)}, {self.reps} reps)"


def quantile(values, q):
    """The q-quantile of values, interpolating linearly between the two nearest ranks (numpy's default method)."""
    s = sorted(values)
    if not s:
        raise ValueError("quantile of no values")
    if not 0 <= q <= 1:
        raise ValueError(f"q must be between 0 and 1, got {q}")
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(times):
    """A Timing from per-repetition times (seconds). The median, not the mean: one repetition that an interrupt or
    a clock change slowed down moves a mean but not a median."""
    times = tuple(float(t) for t in times)
    if not times:
        raise ValueError("summarize: no times to summarize (reps must be at least 1)")
    return Timing(quantile(times, 0.5), quantile(times, 0.25), quantile(times, 0.75), times)


def gbps(nbytes, seconds):
    """Bandwidth in GB/s of moving nbytes in `seconds`."""
    if seconds <= 0:
        raise ValueError(f"gbps: the time must be positive, got {seconds}")
    return nbytes / seconds / 1e9


def tflops(flops, seconds):
    """Arithmetic rate in TFLOP/s (10^12 floating-point operations per second; a multiply-add counts 2)."""
    if seconds <= 0:
        raise ValueError(f"tflops: the time must be positive, got {seconds}")
    return flops / seconds / 1e12


def fmt_time(seconds):
    """A time with its unit, three significant digits: 521 us, 68.2 us, 1.25 ms."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _clamp(x, lo, hi):
    return max(lo, min(hi, x))


# ----------------------------------------------------------------------------------------------
# Devices


def default_device():
    """The current GPU if there is one, else the CPU."""
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def as_device(device):
    """torch.device from a device, a string ("cuda:1") or a GPU index (1); None gives default_device(), and
    "cuda" the current GPU (where there is one), so that the result always names one device."""
    if device is None:
        return default_device()
    device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def cuda_device(device=None, what="this"):
    """The GPU to time on, with its index filled in; a clear error on a machine without one, or for a CPU device."""
    if device is not None:
        device = as_device(device)
        if device.type != "cuda":
            raise ValueError(
                f"{what} times CUDA work, but the device given is {device}; "
                f"time CPU work with host_time(fn) (or benchmark(fn, device='cpu'))"
            )
    if not torch.cuda.is_available():
        raise NoGPUError(
            f"{what} needs a CUDA GPU, and this machine has none (torch.cuda.is_available() is False). "
            f"On the CPU, time CPU work with host_time(fn) or benchmark(fn, device='cpu')."
        )
    if device is None or device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def synchronizer(device=None):
    """A function that waits until `device` has finished its queued work. On the CPU it does nothing: a CPU op has
    finished when it returns."""
    device = as_device(device)
    if device.type == "cpu":
        return lambda: None
    device = cuda_device(device, "synchronizing")
    return functools.partial(torch.cuda.synchronize, device)


# ----------------------------------------------------------------------------------------------
# Host timing: the add2 tutorial's loop and its four synchronisation choices


def host_time(fn, sync="both", *, device=None, warmup=10, reps=10, synchronize=None, spans=None, annotate=False):
    """Time fn() with the host clock, as the add2 tutorial does: `warmup` calls, then `reps` timed calls.

    sync says where the loop waits for the device (SYNC_MODES): "both" before and after each timed call (right),
    "before", "after" or "none". As in the tutorial, nothing waits between the warm-up and the first timed call, which
    is what makes "after" slow on its first call. The device is synchronised once before the warm-up (work queued
    before this call is not counted) and once at the end, outside every timed region (nothing is left running).

    device: whose queue to wait for (default: the current GPU, else the CPU, where waiting is a no-op);
    synchronize: a function to call instead (ToyStream.synchronize); spans: a list that receives
    ("timed (host)", start, end, label) for the warm-up and each timed call; annotate: also mark them for
    torch.profiler (profile_timeline uses it). Returns a Timing whose `times` are in call order."""
    if sync not in SYNC_MODES:
        raise ValueError(f"sync must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    wait = synchronize or synchronizer(device)
    wait_before, wait_after = sync in ("both", "before"), sync in ("both", "after")
    mark = torch.profiler.record_function if annotate else (lambda name: nullcontext())
    clock = time.perf_counter
    times = []
    with mark("host_time"):
        wait()
        w0 = clock()
        with mark("warm-up"):
            for _ in range(warmup):
                fn()
        if spans is not None and warmup:
            spans.append(("timed (host)", w0, clock(), "warm-up"))
        for i in range(reps):
            if wait_before:
                wait()
            with mark(f"timed #{i}"):
                t0 = clock()
                fn()
                if wait_after:
                    wait()
                t1 = clock()
            times.append(t1 - t0)
            if spans is not None:
                spans.append(("timed (host)", t0, t1, f"timed #{i}"))
        wait()
    return summarize(times)


class ToyStream:
    """A pretend GPU for machines without one: launch(seconds) queues `seconds` of work and returns after a short
    host-side cost, like a kernel launch; a worker thread runs the queue in order, like a CUDA stream;
    synchronize() waits until the queue is empty, like torch.cuda.synchronize(). Every launch, synchronize and
    piece of work is recorded in .spans, in the rows of a timeline picture, so kit.timeline.draw_timeline can show it.

    The work is time.sleep, which releases Python's lock, so host and "GPU" really run at the same time."""

    def __init__(self, launch_cost=100e-6):
        self.launch_cost = launch_cost
        self.spans = []
        self._queue = queue.Queue()
        threading.Thread(target=self._worker, daemon=True, name="ToyStream").start()

    def launch(self, seconds):
        t0 = time.perf_counter()
        time.sleep(self.launch_cost)  # what a real launch costs the host: argument checks, the driver call
        self._queue.put(seconds)
        self.spans.append(("launch (host)", t0, time.perf_counter(), "launch"))

    def synchronize(self):
        t0 = time.perf_counter()
        self._queue.join()
        self.spans.append(("sync (host)", t0, time.perf_counter(), "synchronize"))

    def _worker(self):
        while True:
            seconds = self._queue.get()
            t0 = time.perf_counter()
            time.sleep(seconds)
            self.spans.append(("kernel (GPU)", t0, time.perf_counter(), "kernel"))
            self._queue.task_done()


# ----------------------------------------------------------------------------------------------
# The GPU: a spin of known length, the L2 flush buffer

_spin_rates = {}  # GPU index -> cycles per second of the clock torch.cuda._sleep counts
CALIBRATION_CYCLES = 100_000_000  # ~50 ms at 2 GHz


def spin_rate(device=None):
    """Cycles per second of the clock that torch.cuda._sleep(cycles) spins on (the SM clock, clock64()).

    Measured once per GPU with the host clock, synchronising before and after a spin of 10^8 cycles (~50 ms): at
    that length the host's own costs (launch, synchronize: tens of microseconds) are under 0.1% of the reading.
    CUDA events play no part, which is what lets a test check the event timer against a spin: the two clocks
    are independent."""
    dev = cuda_device(device, "spin_rate")
    if dev.index not in _spin_rates:
        with torch.cuda.device(dev):
            torch.cuda._sleep(1_000_000)  # load the spin kernel and wake the clocks before reading them
            torch.cuda.synchronize(dev)
            rates = []
            for _ in range(3):
                t0 = time.perf_counter()
                torch.cuda._sleep(CALIBRATION_CYCLES)
                torch.cuda.synchronize(dev)
                rates.append(CALIBRATION_CYCLES / (time.perf_counter() - t0))
        _spin_rates[dev.index] = statistics.median(rates)
    return _spin_rates[dev.index]


def spin(seconds, device=None):
    """Queue a one-thread kernel that keeps the GPU busy for `seconds`, on the current stream of `device`; returns
    at once. A kernel of known length: for testing timers, and for keeping the GPU ahead of the host."""
    dev = cuda_device(device, "spin")
    cycles = int(seconds * spin_rate(dev))
    with torch.cuda.device(dev):
        torch.cuda._sleep(cycles)


_flush_buffers = {}  # GPU index -> buffer of twice the L2's size


def l2_flush_buffer(device=None):
    """A buffer twice the size of the GPU's L2 cache, allocated once per GPU. Zeroing it before a timed call evicts
    whatever the previous call left in L2, so every call reads its inputs from memory, as it would in a model
    where other work runs in between."""
    dev = cuda_device(device, "l2_flush_buffer")
    if dev.index not in _flush_buffers:
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or (128 << 20)  # unknown: 256 MB
        _flush_buffers[dev.index] = torch.empty(2 * l2, dtype=torch.uint8, device=dev)
    return _flush_buffers[dev.index]


# ----------------------------------------------------------------------------------------------
# Device timing with CUDA events


def device_time(fn, *, device=None, flush_l2=True, backlog=True, warmup=None, reps=None, budget=0.1):
    """Time the GPU work fn() queues, with a pair of CUDA events around each repetition.

    Runs on `device` (default: the current GPU) and its current stream: fn must launch there (torch ops on that
    GPU's tensors do). One untimed first call (module loading, allocation), then a warm-up, then `reps` timed
    repetitions; without warmup/reps, about budget/4 seconds of warm-up and `budget` seconds of repetitions
    (10 to 1000 of them). Before each repetition, queued ahead of its start event:
    - flush_l2: zero a buffer twice the L2's size, so inputs come from memory and not from the last repetition;
    - backlog: a spin twice as long as the host takes to queue one repetition. Otherwise, for a kernel shorter
      than the host's launch cost, the GPU would sit idle between the start event and the kernel, waiting for
      the host to launch it, and the pair would time the host (notebook 04 measures that).
    Returns a Timing of the repetitions."""
    dev = cuda_device(device, "device_time")
    with torch.cuda.device(dev):
        stream = torch.cuda.current_stream(dev)
        flush = l2_flush_buffer(dev) if flush_l2 else None
        fn()
        torch.cuda.synchronize(dev)
        spin_seconds = 50e-6 if backlog else 0.0
        trial, host = _event_reps(fn, dev, stream, flush, spin_seconds, 5)
        estimate = max(statistics.median(trial), 1e-7)
        if backlog:  # 2x: room for the host's jitter; at most 10 ms, however slow the host side of fn is
            spin_seconds = _clamp(2 * statistics.median(host), 20e-6, 10e-3)
        n_warmup = warmup if warmup is not None else _clamp(round(budget / 4 / estimate), 1, 100)
        n_reps = reps if reps is not None else _clamp(round(budget / estimate), 10, 1000)
        if n_warmup:
            _event_reps(fn, dev, stream, flush, spin_seconds, n_warmup)
        times, _ = _event_reps(fn, dev, stream, flush, spin_seconds, n_reps)
    return summarize(times)


def side_by_side(fns, *, device=None, rounds=5, budget=0.1, **device_time_args):
    """device_time of each callable in `fns` (a dict name -> fn), taken in turn over `rounds` rounds of
    budget / rounds seconds each, as per_call does on the host: a GPU shared for a while (another student's kernels
    on a class server, another test) slows every one of them alike, and their ratios stay fair. Timed one after the
    other instead, a burst of someone else's work lands on one of them only. Returns {name: Timing} of the
    repetitions of all rounds. Other arguments as device_time's (reps= is per round)."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name] += device_time(fn, device=device, budget=budget / rounds, **device_time_args).times
    return {name: summarize(ts) for name, ts in times.items()}


def _event_reps(fn, dev, stream, flush, spin_seconds, n):
    """n repetitions of [flush] [spin] start-event fn() end-event, all queued on `stream`; then one wait.
    Returns the event times (s) and the host's time to queue each repetition (s)."""
    cycles = int(spin_seconds * spin_rate(dev)) if spin_seconds else 0
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    host = []
    for start, end in zip(starts, ends):
        t0 = time.perf_counter()
        if flush is not None:
            flush.zero_()
        if cycles:
            torch.cuda._sleep(cycles)
        start.record(stream)
        fn()
        end.record(stream)
        host.append(time.perf_counter() - t0)
    ends[-1].synchronize()  # the events complete in stream order: the last one done means all are
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)], host


def benchmark(fn, device=None, *, budget=0.1, **device_time_args):
    """Time fn the right way for where it runs: device_time on a GPU; on the CPU, host_time with a warm-up and
    enough repetitions to fill about `budget` seconds (5 to 200)."""
    dev = as_device(device)
    if dev.type == "cuda":
        return device_time(fn, device=dev, budget=budget, **device_time_args)
    t0 = time.perf_counter()
    fn()
    estimate = max(time.perf_counter() - t0, 1e-7)
    return host_time(
        fn,
        "both",
        device=dev,
        warmup=_clamp(round(budget / 4 / estimate), 1, 20),
        reps=_clamp(round(budget / estimate), 5, 200),
    )


def time_copy(nbytes, device=None, **benchmark_args):
    """Time a copy that moves `nbytes` in all: nbytes/2 read, nbytes/2 written (device-to-device on a GPU).
    A copy does nothing but move bytes, so its bandwidth is the ceiling an op that moves as many can hope for."""
    dev = as_device(device)
    if dev.type == "cuda":
        dev = cuda_device(dev, "time_copy")
    half = max(nbytes // 2, 1)
    src = torch.empty(half, dtype=torch.uint8, device=dev).random_()
    dst = torch.empty_like(src)
    return benchmark(lambda: dst.copy_(src), dev, **benchmark_args)


def copy_ceiling(device=None, nbytes=None, **benchmark_args):
    """The machine's memory bandwidth ceiling in GB/s, measured: a copy moving `nbytes` (default 2 GB on a GPU,
    far past any cache; 256 MB on the CPU), bytes read plus bytes written over the median time."""
    dev = as_device(device)
    nbytes = nbytes or (1 << (31 if dev.type == "cuda" else 28))
    return time_copy(nbytes, dev, **benchmark_args).gbps(2 * max(nbytes // 2, 1))


# ----------------------------------------------------------------------------------------------
# What a caller pays: host time per call, and one call end to end


def per_call(fns, *, calls=2000, rounds=15, device=None):
    """Host time per call of each zero-argument callable in `fns` (a dict name -> fn), in seconds: the median over
    `rounds` of (time of `calls` back-to-back calls) / calls. The rounds take the callables in turn, so a machine
    that slows down for a while slows every one of them alike, and their ratios stay fair. On a GPU each round ends
    with a synchronize (inside its time, spread over `calls` calls), so a queue of launches never builds up."""
    sync = synchronizer(device)
    for fn in fns.values():  # warm-up: first calls allocate, load code, fill caches
        for _ in range(20):
            fn()
    sync()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            times[name].append((time.perf_counter() - t0) / calls)
    return {name: summarize(ts) for name, ts in times.items()}


def end_to_end(fn, device=None, *, reps=200):
    """One call as a harness that times a submission sees it: the GPU idle, CUDA events recorded just before and
    just after the call. The start event runs at once, so the time is the host's launch path plus the kernel:
    what a small op costs a caller, which device_time (a kernel among many, the queue kept full) leaves out."""
    dev = cuda_device(device, "end_to_end")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(10):
        fn()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize(dev)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return summarize(times)
