"""Notebook 04's measurements, as functions: run live where there is a GPU, or recorded once on a GPU machine with

    python -m kit.record_timing            # writes results/<date>-<gpu>/timing.json (about a minute)

and shipped with the kit, so that a machine without a GPU can still show what they measured, labelled with the
GPU and the date. Every function returns plain JSON data (lists and dicts, times in seconds), and the notebook's
`result()` passes live results through JSON too: a cell sees the same thing live and recorded.

`--cpu` runs what can run on the CPU (to exercise the code; CPU numbers are not the lesson) and leaves the
GPU-only results empty.
"""

import argparse
import datetime
import json
import statistics
import sys
import time
import traceback
from contextlib import nullcontext
from pathlib import Path

import torch

from kit import results, timeline, timing
from kit.devices import run_program
from kit.timing import SYNC_MODES, device_time, host_time

ROOT = Path(__file__).resolve().parent.parent
RECORD = "timing.json"


def add2_into(n, device):
    """A call of our add2 that writes into a preallocated c, as the add2 tutorial's torch_launch_add2(c, a, b, n) did.
    Returns (fn, nbytes); fn calls the operator directly (ops.add2 also checks the kernel files for edits)."""
    from loader import ops

    dev = timing.as_device(device)
    a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
    c = torch.empty_like(a)
    ops.add2(a, b, out=c)  # builds and registers the op on first use
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    add2_out = torch.ops.labkit.add2_out
    return (lambda: add2_out(a, b, c)), 3 * n * a.element_size()


# ----------------------------------------------------------------------------------------------
# The experiments


def async_launch(device, n=1 << 26, reps=5):
    """How long the launch takes to return, against how long until the result is there."""
    fn, _ = add2_into(n, device)
    wait = timing.synchronizer(device)
    launch, done = [], []
    for _ in range(reps):
        wait()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        wait()
        launch.append(t1 - t0)
        done.append(time.perf_counter() - t0)
    return {"n": n, "launch": launch, "done": done}


def four_cases(device, n=1 << 20, warmup=10, reps=20):
    """The add2 tutorial's timing loop with each of its four synchronisation choices: per-call times of each."""
    fn, _ = add2_into(n, device)
    cases = {mode: list(host_time(fn, mode, device=device, warmup=warmup, reps=reps).times) for mode in SYNC_MODES}
    return {"n": n, "warmup": warmup, "reps": reps, "cases": cases}


def first_iteration(device, sizes=(1 << 20, 1 << 24), warmup=10, reps=20):
    """Sync after only, at several sizes: is the first timed call slowed by the unsynchronised warm-up?"""
    runs = []
    for n in sizes:
        fn, _ = add2_into(n, device)
        runs.append({"n": n, "times": list(host_time(fn, "after", device=device, warmup=warmup, reps=reps).times)})
    return {"mode": "after", "warmup": warmup, "reps": reps, "runs": runs}


def timelines(device, n=1 << 24, warmup=5, reps=3):
    """torch.profiler's record of the add2 tutorial's loop in each of the four cases, as timeline spans."""
    fn, _ = add2_into(n, device)
    cases = {mode: timeline.profile_timeline(fn, mode, device, warmup=warmup, reps=reps) for mode in SYNC_MODES}
    return {"n": n, "warmup": warmup, "reps": reps, "cases": cases}


def events_vs_kernel(device, n=1 << 20, reps=50):
    """Event pairs recorded back to back around a small kernel, against the kernel's own time (profiler) and
    against device_time, which keeps the GPU busy ahead of each pair. No L2 flush in any of the three."""
    dev = timing.cuda_device(device, "events_vs_kernel")
    fn, _ = add2_into(n, dev)
    with torch.cuda.device(dev):
        stream = torch.cuda.current_stream(dev)
        for _ in range(10):
            fn()
        torch.cuda.synchronize(dev)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for start, end in zip(starts, ends):  # the obvious loop: start, kernel, end, and again
            start.record(stream)
            fn()
            end.record(stream)
        ends[-1].synchronize()
        back_to_back = [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    spans = timeline.profile_timeline(fn, "both", dev, warmup=0, reps=reps)
    kernel = [s[2] - s[1] for s in spans if s[0] == "kernel (GPU)" and "add2" in s[3]]
    ours = device_time(fn, device=dev, flush_l2=False)
    return {"n": n, "back_to_back": back_to_back, "kernel": kernel, "device_time": ours.to_dict()}


def timers(device, n=1 << 24):
    """One call, timed by each timer: host clock (sync both), torch.utils.benchmark.Timer, device_time with and
    without the L2 flush, and triton.testing.do_bench. On the CPU, the first two (device_time's place is taken
    by kit.timing.benchmark, which is host_time there)."""
    from torch.utils.benchmark import Timer

    dev = timing.as_device(device)
    fn, nbytes = add2_into(n, dev)
    out = {"n": n, "nbytes": nbytes}
    out["host"] = host_time(fn, "both", device=dev, warmup=10, reps=50).to_dict(times=False)
    with torch.cuda.device(dev) if dev.type == "cuda" else nullcontext():  # Timer synchronizes the current GPU
        measured = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(
            min_run_time=0.3
        )
    out["torch_timer"] = timing.summarize(measured.times).to_dict(times=False)
    if dev.type != "cuda":
        out["ours"] = timing.benchmark(fn, dev).to_dict(times=False)
        out["ours_no_flush"] = out["do_bench"] = None
        return out
    out["ours"] = device_time(fn, device=dev).to_dict(times=False)
    out["ours_no_flush"] = device_time(fn, device=dev, flush_l2=False).to_dict(times=False)
    try:
        import triton.testing

        with torch.cuda.device(dev):  # do_bench times on the current GPU
            q = list(triton.testing.do_bench(fn, quantiles=[0.5, 0.25, 0.75]))  # milliseconds
        out["do_bench"] = {"median": q[0] / 1e3, "q25": q[1] / 1e3, "q75": q[2] / 1e3}
    except Exception as e:  # no Triton, or one that does not run here: the comparison goes without it
        print(f"[timers: triton.testing.do_bench unavailable: {type(e).__name__}: {e}]")
        out["do_bench"] = None
    return out


def cache_effect(device, sizes=tuple(1 << k for k in range(16, 27, 2))):
    """add2 with and without the L2 flush, across sizes that fit the L2 and sizes that do not."""
    dev = timing.cuda_device(device, "cache_effect")
    rows = []
    for n in sizes:
        fn, nbytes = add2_into(n, dev)
        rows.append(
            {
                "n": n,
                "nbytes": nbytes,
                "flush": device_time(fn, device=dev).to_dict(times=False),
                "no_flush": device_time(fn, device=dev, flush_l2=False).to_dict(times=False),
            }
        )
    l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0)
    return {"l2_bytes": l2, "rows": rows}


def spread(device, n=1 << 20, reps=200):
    """Many repetitions of one call, to see their spread: median, quartiles and mean."""
    dev = timing.as_device(device)
    fn, _ = add2_into(n, dev)
    t = device_time(fn, device=dev, reps=reps) if dev.type == "cuda" else host_time(fn, device=dev, reps=reps)
    return {"n": n, "times": list(t.times)}


def cold_start(device):
    """The first three calls of torch.add and of ops.add2 in a fresh Python process (kit/programs/cold_start.py)."""
    r = run_program("cold_start", timing.as_device(device), timeout=900)
    if r.result is None:
        raise RuntimeError(f"cold_start: the fresh process failed:\n{r.stderr[-3000:]}")
    return r.result


def bandwidth_sweep(device, sizes=tuple(1 << k for k in range(12, 29, 2))):
    """add2 float32 GB/s against n: ours, torch.add, the tutorial's kernel, and a copy of the same bytes; rows and
    copies as bench/run.py writes them into bench.json (bench/bench_add2.py is the same loop, for every dtype)."""
    from loader import ops

    dev = timing.as_device(device)
    rows, copies = [], []
    for n in sizes:
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        ops.add2(a, b)  # builds and registers the op on first use
        impls = {"ours": lambda: torch.ops.labkit.add2(a, b), "torch": lambda: torch.add(a, b)}
        if dev.type == "cuda":
            impls["seed"] = lambda: torch.ops.labkit.add2_seed(a, b)
        nbytes = 3 * n * a.element_size()  # read a and b, write c
        for impl, fn in impls.items():
            t = timing.benchmark(fn, dev)
            rows.append({"n": n, "impl": impl, "nbytes": nbytes, "median_s": t.median, "q25_s": t.q25, "q75_s": t.q75})
        t = timing.time_copy(nbytes, dev)
        copies.append({"nbytes": nbytes, "median_s": t.median, "q25_s": t.q25, "q75_s": t.q75})
        a = b = impls = None
    return {"device": device_name(dev), "rows": rows, "copy": copies}


# ----------------------------------------------------------------------------------------------
# Live or recorded


def device_name(device):
    dev = timing.as_device(device)
    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"


def _label(data):
    return f"recorded on {data['device']} on {data['date']} (torch {data['torch']}), from {data['file']}"


def result(name, measure):
    """For a notebook cell: measure now if this machine has a GPU; else the recorded GPU result; else None,
    saying so. The result goes through JSON either way, so live and recorded results look the same."""
    if torch.cuda.is_available():
        data = json.loads(json.dumps(measure()))
        print(f"[{name}: measured now on {torch.cuda.get_device_name()}]")
        return data
    data = results.recorded(RECORD, keep=results.on_gpu)
    if data is None:
        print(
            f"[skipped: {name} needs a CUDA GPU, and no recorded GPU result is shipped with the kit yet "
            f"(`python -m kit.record_timing` on a GPU machine records one)]"
        )
        return None
    if data.get(name) is None:
        print(
            f"[skipped: {name} needs a CUDA GPU, and the recorded file {data['file']} ({data['device']}, "
            f"{data['date']}) has no {name} result]"
        )
        return None
    print(f"[{name}: {_label(data)}; this machine has no GPU]")
    return data[name]


def _add2_row(row):
    """A row of the sweep: add2's float32 forward (a bench.json of other ops alone has none)."""
    return row["op"] == "add2" and row["pass"] == "forward" and row["dtype"] == "float32"


def bench_result(measure):
    """The add2 float32 bandwidth sweep: measured now on a GPU, else the newest recorded results/*/bench.json."""
    if torch.cuda.is_available():
        data = json.loads(json.dumps(measure()))
        print(f"[bandwidth: measured now on {data['device']}]")
        return data
    data = results.recorded("bench.json", keep=lambda d: results.on_gpu(d) and any(_add2_row(r) for r in d["rows"]))
    if data is None:
        print(
            "[skipped: the bandwidth sweep needs a CUDA GPU, and no recorded GPU benchmark is shipped with the kit "
            "yet (`make bench` on a GPU machine records one into results/<date>-<gpu>/bench.json)]"
        )
        return None
    rows = [r for r in data["rows"] if _add2_row(r)]
    print(f"[bandwidth: {_label(data)}; this machine has no GPU]")
    return {"device": data["device"], "rows": rows, "copy": data["copy"]}


# ----------------------------------------------------------------------------------------------
# Pictures of the results


def median(values):
    return statistics.median(values)


def plot_four_cases(r, ax=None, title=None):
    """One bar per case: the median time the host clock read; a dot for the first timed call."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.6))
    modes = list(SYNC_MODES)
    medians = [median(r["cases"][m]) * 1e6 for m in modes]
    ax.bar(range(4), medians, color=["#55a868", "#c44e52", "#4c72b0", "#c44e52"], label="median")
    ax.scatter(range(4), [r["cases"][m][0] * 1e6 for m in modes], color="black", zorder=3, label="first timed call")
    for i, v in enumerate(medians):
        ax.text(i, v, timing.fmt_time(v / 1e6), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(4))
    ax.set_xticklabels(["sync before\nand after", "sync before\nonly", "sync after\nonly", "no sync"])
    ax.set_yscale("log")
    ax.set_ylabel("host clock reading (us)")
    ax.legend(fontsize=8)
    ax.set_title(title or f"add2, n = 2^{r['n'].bit_length() - 1}: what each timing loop reads", fontsize=10)
    return ax


def plot_first_iteration(r, ax=None, title=None):
    """Per-call times of the sync-after-only loop, one line per size."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.6))
    for run in r["runs"]:
        ax.plot(
            [t * 1e6 for t in run["times"]],
            marker="o",
            markersize=3,
            label=f"n = 2^{run['n'].bit_length() - 1}: median {median(run['times']) * 1e6:.3g} us",
        )
    ax.set_yscale("log")
    ax.set_xlabel("timed call")
    ax.set_ylabel("host clock reading (us)")
    ax.legend(fontsize=8)
    ax.set_title(title or f"sync after only, after {r['warmup']} unsynchronised warm-up calls", fontsize=10)
    return ax


def draw_four_timelines(r, title=None):
    """The four cases' timelines, one under the other."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(11, 9))
    for ax, mode in zip(axes, SYNC_MODES):
        timeline.draw_timeline(r["cases"][mode], ax=ax, title=mode)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def plot_timings(named, ax=None, title=None):
    """Horizontal bars: median with a quartile whisker, for {label: {median, q25, q75}}."""
    import matplotlib.pyplot as plt

    named = {k: v for k, v in named.items() if v}
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.6 + 0.5 * len(named)))
    labels = list(named)
    med = [named[k]["median"] * 1e6 for k in labels]
    err = [
        [(named[k]["median"] - named[k]["q25"]) * 1e6 for k in labels],
        [(named[k]["q75"] - named[k]["median"]) * 1e6 for k in labels],
    ]
    ax.barh(range(len(labels)), med, xerr=err, color="#4c72b0", capsize=3)
    for i, (v, high) in enumerate(zip(med, err[1])):
        ax.text(v + high, i, "  " + timing.fmt_time(v / 1e6), va="center", fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel("median (us), whiskers at the quartiles")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def plot_cache_effect(r, ax=None, title=None):
    """add2 GB/s against n with and without the L2 flush, and where the op's bytes equal the L2's size."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.6))
    ns = [row["n"] for row in r["rows"]]
    for key, label in (("no_flush", "without flush (inputs left in L2)"), ("flush", "with flush (from memory)")):
        ax.plot(ns, [timing.gbps(row["nbytes"], row[key]["median"]) for row in r["rows"]], marker="o", label=label)
    if r.get("l2_bytes"):
        ax.axvline(r["l2_bytes"] / 12, color="gray", linestyle=":", label="12 bytes x n = L2 size")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("elements (n)")
    ax.set_ylabel("GB/s")
    ax.legend(fontsize=8)
    ax.set_title(title or "add2 float32: the cache effect", fontsize=10)
    return ax


# ----------------------------------------------------------------------------------------------
# Recording


def record(device, quick=False, log=print):
    """Every experiment on `device` (a GPU; on the CPU, those that can run there), as one JSON-able dict."""
    dev = timing.as_device(device)
    cuda = dev.type == "cuda"
    big = 1 << (24 if cuda else 16)  # sizes where the GPU's kernel outlasts its launch; small on the CPU
    steps = [
        ("async_launch", lambda: async_launch(dev, n=1 << (26 if cuda else 18))),
        ("four_cases", lambda: four_cases(dev, n=1 << (20 if cuda else 12))),
        ("first_iteration", lambda: first_iteration(dev, sizes=(1 << 20, big) if cuda else (1 << 12, big))),
        ("timelines", lambda: timelines(dev, n=big)),
        ("events_vs_kernel", (lambda: events_vs_kernel(dev)) if cuda else None),
        ("timers", lambda: timers(dev, n=big)),
        ("cache_effect", (lambda: cache_effect(dev)) if cuda else None),
        ("spread", lambda: spread(dev, n=1 << (20 if cuda else 12), reps=200 if cuda and not quick else 50)),
        ("cold_start", lambda: cold_start(dev)),
        (
            "copy_ceiling",
            lambda: {"nbytes": 1 << (31 if cuda else 26), "gbps": timing.copy_ceiling(dev, 1 << (31 if cuda else 26))},
        ),
    ]
    rec = {
        "device": device_name(dev),
        "kind": dev.type,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.date.today().isoformat(),
    }
    rec["errors"] = {}
    for name, measure in steps:
        t0 = time.perf_counter()
        rec[name], status = None, "needs a GPU: skipped"
        if measure:
            try:  # one experiment that fails costs its own result only, not the whole record
                rec[name], status = json.loads(json.dumps(measure())), "done"
            except Exception:
                rec["errors"][name] = traceback.format_exc()
                status = f"FAILED:\n{rec['errors'][name]}"
        log(f"  {name}: {status} ({time.perf_counter() - t0:.1f} s)")
    return rec


def summary(rec):
    """The headline numbers of a record, one per line (experiments that did not run are left out)."""
    us = lambda s: f"{s * 1e6:.3g} us"  # noqa: E731
    p2 = lambda n: f"2^{n.bit_length() - 1}"  # noqa: E731
    lines = [f"{rec['device']}, {rec['date']}, torch {rec['torch']}"]
    if rec.get("async_launch"):
        a = rec["async_launch"]
        lines.append(
            f"async launch, n={p2(a['n'])}: the call returns after {us(median(a['launch']))}, "
            f"the result is there after {us(median(a['done']))}"
        )
    if rec.get("four_cases"):
        f = rec["four_cases"]
        lines.append(
            f"four cases, n={p2(f['n'])} (median / first call): "
            + ", ".join(f"{m} {us(median(f['cases'][m]))} / {us(f['cases'][m][0])}" for m in SYNC_MODES)
        )
    for run in (rec.get("first_iteration") or {}).get("runs", []):
        lines.append(
            f"sync after only, n={p2(run['n'])}: first timed call {us(run['times'][0])}, "
            f"median {us(median(run['times']))}"
        )
    for mode, spans in (rec.get("timelines") or {}).get("cases", {}).items():
        lines.append(f"timeline {mode}: kernels inside each timed call {timeline.kernels_inside(spans)}")
    e = rec.get("events_vs_kernel")
    if e and e["kernel"]:
        lines.append(
            f"event pairs back to back, n={p2(e['n'])}: {us(median(e['back_to_back']))}; the kernel "
            f"(profiler) {us(median(e['kernel']))}; device_time {us(e['device_time']['median'])}"
        )
    t = rec.get("timers")
    if t:
        lines.append(
            f"timers, n={p2(t['n'])}: "
            + ", ".join(
                f"{k} {us(t[k]['median'])}"
                for k in ("host", "torch_timer", "ours", "ours_no_flush", "do_bench")
                if t.get(k)
            )
        )
    c = rec.get("cache_effect")
    if c:
        lines.append(
            "GB/s with flush / without: "
            + ", ".join(
                f"{p2(row['n'])} {timing.gbps(row['nbytes'], row['flush']['median']):.0f}/"
                f"{timing.gbps(row['nbytes'], row['no_flush']['median']):.0f}"
                for row in c["rows"]
            )
        )
    if rec.get("cold_start"):
        lines.append(
            "cold start (first, second, third call): "
            + "; ".join(f"{k} " + ", ".join(us(x) for x in v) for k, v in rec["cold_start"].items())
        )
    if rec.get("copy_ceiling"):
        lines.append(
            f"copy ceiling ({rec['copy_ceiling']['nbytes'] / 1e9:.2g} GB moved): {rec['copy_ceiling']['gbps']:.0f} GB/s"
        )
    lines += [f"FAILED: {name} (traceback in {RECORD})" for name in rec.get("errors", {})]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description="Record notebook 04's GPU measurements into results/<date>-<gpu>/")
    p.add_argument("--cpu", action="store_true", help="run what can run on the CPU (exercises the code)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--out", type=Path, help="folder to write timing.json into (default: results/<date>-<device>/)")
    args = p.parse_args(argv)
    if not args.cpu and not torch.cuda.is_available():
        print(
            "kit.record_timing: this machine has no CUDA GPU (torch.cuda.is_available() is False), so there is "
            "nothing to record. Run it on a GPU machine; --cpu exercises the code on the CPU."
        )
        return 0
    dev = torch.device("cpu") if args.cpu else timing.default_device()
    name = device_name(dev)
    out_dir = args.out or results.machine_dir(name)
    print(f"recording notebook 04's measurements on {name}:")
    rec = record(dev, quick=args.quick)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / RECORD).write_text(json.dumps(rec) + "\n")
    print(f"\nwrote {out_dir / RECORD}\n\n{summary(rec)}")
    return 1 if rec["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
