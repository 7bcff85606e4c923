"""`make bench` (python bench/run.py): every op against PyTorch and against a copy of the same bytes, on the GPU.

Each bench/bench_<op>.py defines `run(bench)`, which allocates its inputs once per size and calls

    bench.measure(op, pass_, dtype, n, impl, fn, nbytes, flops=None)

for each implementation: op ("add2"), pass_ ("forward" | "backward"), dtype (a torch.dtype), n (elements),
impl ("ours" | "torch" | "seed" | ...), fn (a zero-argument callable that launches the work) and nbytes (the bytes
the op must move: each input read once, each output written once). measure times fn with the device timer
(kit.timing.device_time: CUDA events, warm-up, L2 flush, median and quartiles over many repetitions) and records
a row. `bench.sizes` are the element counts to run (2^12 to 2^28 by powers of 4; fewer with --quick, and
`bench.quick` says so) and `bench.device` the torch.device to allocate on. A module may also define BARS (see
evaluate_bars) to have PASS/FAIL lines in the summary. A compute-bound op (matmul) passes `flops` too: its rows
are tabled and plotted in TFLOP/s instead of GB/s, with no copy beside them (a copy says nothing about
arithmetic), and its module may leave more in `bench.extra[op]` (peaks, registers), which bench.json keeps.

After the bandwidths, bench/calls.py measures what a caller pays per call at small sizes (ops.<op>, the registered
operator and PyTorch's op, host time and, on a GPU, one call end to end), on the CPU and the GPU; on a machine
without a GPU that table is all it measures.

This script then times a copy of each row's nbytes (nbytes/2 read, nbytes/2 written: the ceiling for moving that
many bytes) and writes results/<date>-<gpu>/: bench.json (every row, the copies, device, torch version, date),
bench.md (the table and the bars) and one PNG per op/pass/dtype (GB/s against n, quartile bands, copy line).

Without a GPU there is nothing to measure: it says so and exits 0. --cpu measures the CPU paths with the host
timer instead, to exercise the code (CPU numbers say nothing about the GPU kernels).
"""

import argparse
import datetime
import importlib.util
import json
import platform
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))  # bench/calls.py, also when this file is imported by path (tests/test_timing.py)

import torch  # noqa: E402

from kit import plots, results, timing  # noqa: E402

import calls  # noqa: E402  (bench/calls.py: what a caller pays per call)

GPU_SIZES = [1 << k for k in range(12, 29, 2)]  # 2^12 .. 2^28: 16 KB to 1 GB of float32 per tensor
GPU_QUICK = [1 << 12, 1 << 16, 1 << 20, 1 << 24]  # 2^24 kept so the bars can still be judged
CPU_SIZES = [1 << k for k in range(12, 23, 2)]  # the CPU is ~100x slower: stop at 2^22
CPU_QUICK = [1 << 12, 1 << 14, 1 << 16]


class Bench:
    """What a bench_<op>.py module sees: sizes, device, and measure()."""

    def __init__(self, device, sizes, budget=0.1, log=print, quick=False):
        self.device = device
        self.sizes = list(sizes)
        self.budget = budget
        self.quick = quick
        self.rows = []
        self.extra = {}
        self._log = log

    def measure(self, op, pass_, dtype, n, impl, fn, nbytes, flops=None, timer=None):
        """Time fn (device timer on a GPU, host timer on the CPU; or timer(fn), which returns a Timing), record the
        row, and return the Timing."""
        t = timer(fn) if timer else timing.benchmark(fn, self.device, budget=self.budget)
        row = {
            "op": op,
            "pass": pass_,
            "dtype": dtype_name(dtype),
            "n": int(n),
            "impl": impl,
            "nbytes": int(nbytes),
            "median_s": t.median,
            "q25_s": t.q25,
            "q75_s": t.q75,
            "reps": t.reps,
            "gbps": t.gbps(nbytes),
        }
        rate = f"{fmt_gbps(row['gbps'])} GB/s"
        if flops is not None:
            row["flops"] = int(flops)
            row["tflops"] = timing.tflops(flops, t.median)
            rate = f"{row['tflops']:.2f} TFLOP/s"
        self.rows.append(row)
        self._log(f"  {op} {pass_} {row['dtype']} n={fmt_n(n)} {impl}: {timing.fmt_time(t.median)}, {rate}")
        return t


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def fmt_n(n):
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def fmt_gbps(x):
    return "-" if x is None else (f"{x:.0f}" if x >= 100 else f"{x:.1f}")


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


# ----------------------------------------------------------------------------------------------
# Running the bench modules


def discover(folder=HERE):
    return sorted(folder.glob("bench_*.py"))


def load_module(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_modules(paths, bench, log=print):
    """Import and run each module; one that fails is reported and skipped, so the others still give results."""
    bars, errors = [], []
    for path in paths:
        log(f"{path.name}:")
        try:
            module = load_module(path)
            bars += [normalize_bar(bar) for bar in getattr(module, "BARS", [])]  # judged even if run() fails half way
            module.run(bench)
        except Exception:
            errors.append({"module": path.name, "error": traceback.format_exc()})
            log(f"  FAILED:\n{traceback.format_exc()}")
    return bars, errors


def measure_copies(rows, device, budget, log=print):
    """The copy ceiling for every distinct nbytes of the memory-bound rows (those without flops)."""
    copies = []
    for nbytes in sorted({r["nbytes"] for r in rows if "flops" not in r}):
        t = timing.time_copy(nbytes, device, budget=budget)
        moved = 2 * max(nbytes // 2, 1)
        copies.append(
            {
                "nbytes": nbytes,
                "median_s": t.median,
                "q25_s": t.q25,
                "q75_s": t.q75,
                "reps": t.reps,
                "gbps": timing.gbps(moved, t.median),
            }
        )
        log(f"  copy {nbytes} bytes: {timing.fmt_time(t.median)}, {fmt_gbps(copies[-1]['gbps'])} GB/s")
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the copy buffers of the largest sizes are GBs: give them back
    return copies


# ----------------------------------------------------------------------------------------------
# Bars, table, plots


def evaluate_bars(rows, bars, device_type, copies=()):
    """Each bar is a dict: op, pass, dtype (name), min_n, impl, vs, at_least, and device ("cuda" by default), and
    optionally max_n: "at every n from min_n to max_n, impl's rate is at least `at_least` times vs's": TFLOP/s where
    the rows count flops (so two shapes of one pass compare by speed), else GB/s. vs may be "copy": a copy of the same
    bytes (from `copies`, run.py's measure_copies), the ceiling of any memory-bound kernel. Returns (bar, status,
    detail) with status PASS, FAIL, or "not measured" (no such rows here, or a bar for another kind of device)."""
    copy_gbps = {c["nbytes"]: c["gbps"] for c in copies}
    results = []
    for bar in bars:
        if bar.get("device", "cuda") != device_type:
            results.append((bar, "not measured", f"a {bar.get('device', 'cuda')} bar; this run is on {device_type}"))
            continue
        ratios = []
        for n in sorted({r["n"] for r in rows if bar["min_n"] <= r["n"] <= bar.get("max_n", r["n"])}):
            mine = [
                r
                for r in rows
                if r["op"] == bar["op"] and r["pass"] == bar["pass"] and r["dtype"] == bar["dtype"] and r["n"] == n
            ]
            pick = {r["impl"]: r.get("tflops", r["gbps"]) for r in mine}
            if mine and "tflops" not in mine[0] and mine[0].get("nbytes") in copy_gbps:
                pick["copy"] = copy_gbps[mine[0]["nbytes"]]
            if bar["impl"] in pick and bar["vs"] in pick:
                ratios.append((pick[bar["impl"]] / pick[bar["vs"]], n))
        if not ratios:
            results.append((bar, "not measured", f"no {bar['impl']} and {bar['vs']} rows at {sizes_text(bar)}"))
            continue
        worst, at = min(ratios)
        status = "PASS" if worst >= bar["at_least"] else "FAIL"
        results.append((bar, status, f"lowest {worst:.3f} at n={fmt_n(at)} over {len(ratios)} sizes"))
    return results


def normalize_bar(bar):
    """A bar as evaluate_bars reads it: the dtype by name, and "pass" (measure's argument is called pass_)."""
    bar = {**bar, "dtype": dtype_name(bar["dtype"])}
    if "pass" not in bar:
        bar["pass"] = bar.pop("pass_")
    return bar


def sizes_text(bar):
    if bar.get("max_n") == bar["min_n"]:
        return f"n = {fmt_n(bar['min_n'])}"
    return f"n >= {fmt_n(bar['min_n'])}" + (f" and <= {fmt_n(bar['max_n'])}" if "max_n" in bar else "")


def bar_text(bar):
    return (
        f"{bar['op']} {bar['pass']} {bar['dtype']}, {sizes_text(bar)}: {bar['impl']}/{bar['vs']} >= {bar['at_least']}"
    )


def groups(rows):
    """(op, pass, dtype) in the order the rows came."""
    return list(dict.fromkeys((r["op"], r["pass"], r["dtype"]) for r in rows))


def table(rows, copies):
    """The memory-bound rows in GB/s beside a copy; the compute-bound ones (with flops) in TFLOP/s (flops_table)."""
    flop_rows = [r for r in rows if "flops" in r]
    rows = [r for r in rows if "flops" not in r]
    copy_gbps = {c["nbytes"]: c["gbps"] for c in copies}
    lines = [
        "| op | pass | dtype | n | ours GB/s | torch GB/s | copy GB/s | ours/torch | ours % of copy | others GB/s |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    keys = list(dict.fromkeys((r["op"], r["pass"], r["dtype"], r["n"]) for r in rows))
    for op, pass_, dtype, n in keys:
        mine = [r for r in rows if (r["op"], r["pass"], r["dtype"], r["n"]) == (op, pass_, dtype, n)]
        by_impl = {r["impl"]: r for r in mine}
        ours, ref = by_impl.get("ours"), by_impl.get("torch")
        copy = copy_gbps.get((ours or ref or mine[0])["nbytes"])
        ratio = f"{ours['gbps'] / ref['gbps']:.3f}" if ours and ref else "-"
        of_copy = f"{100 * ours['gbps'] / copy:.0f}%" if ours and copy else "-"
        others = ", ".join(f"{r['impl']} {fmt_gbps(r['gbps'])}" for r in mine if r["impl"] not in ("ours", "torch"))
        lines.append(
            f"| {op} | {pass_} | {dtype} | {fmt_n(n)} | {fmt_gbps(ours and ours['gbps'])} | "
            f"{fmt_gbps(ref and ref['gbps'])} | {fmt_gbps(copy)} | {ratio} | {of_copy} | {others or '-'} |"
        )
    parts = ["\n".join(lines)] if rows else []
    return "\n\n".join(parts + ([flops_table(flop_rows)] if flop_rows else []))


def flops_table(rows):
    lines = [
        "| op | pass | dtype | n | ours TFLOP/s | torch TFLOP/s | ours/torch | others TFLOP/s |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    for op, pass_, dtype, n in dict.fromkeys((r["op"], r["pass"], r["dtype"], r["n"]) for r in rows):
        by_impl = {r["impl"]: r for r in rows if (r["op"], r["pass"], r["dtype"], r["n"]) == (op, pass_, dtype, n)}
        ours, ref = by_impl.get("ours"), by_impl.get("torch")
        ratio = f"{ours['tflops'] / ref['tflops']:.3f}" if ours and ref else "-"
        others = ", ".join(f"{impl} {r['tflops']:.2f}" for impl, r in by_impl.items() if impl not in ("ours", "torch"))
        tf = lambda r: f"{r['tflops']:.2f}" if r else "-"  # noqa: E731
        lines.append(f"| {op} | {pass_} | {dtype} | {n} | {tf(ours)} | {tf(ref)} | {ratio} | {others or '-'} |")
    return "\n".join(lines)


def markdown(result, bar_results):
    timer = (
        "CUDA events around each repetition, L2 flushed before each, median of 10 to 1000 repetitions "
        "(kit.timing.device_time)"
        if result["kind"] == "cuda"
        else "host clock, median of 5 to 200 repetitions (kit.timing.host_time): CPU paths, to exercise the code"
    )
    out = [
        f"# Benchmark: {result['device']}, {result['date']}",
        "",
        f"torch {result['torch']}; {timer}. GB/s = the bytes the op must move (inputs read once, outputs written "
        f"once) / median time. copy = a copy moving the same bytes (half read, half written), the ceiling. "
        f"TFLOP/s (compute-bound ops: matmul, n = M = N = K) = the op's flops (2MNK) / median time.",
        "",
        "## Bars",
        "",
    ]
    if not bar_results:
        out.append("No bars declared.")
    for bar, status, detail in bar_results:
        out.append(f"- **{status}** {bar_text(bar)} ({detail})")
    for e in result["errors"]:
        out.append(f"- **ERROR** {e['module']} failed; see bench.json")
    out += ["", "## Results", "", table(result["rows"], result["copy"]), ""]
    if result.get("calls"):
        out += [calls_markdown(result["calls"], result["device"], result["date"]), ""]
    out += [f"![{op} {p} {d}]({plot_name(op, p, d)})" for op, p, d in groups(result["rows"])]
    return "\n".join(out) + "\n"


def plot_name(op, pass_, dtype):
    return f"{op}-{pass_}-{dtype}.png"


def save_plots(result, out_dir):
    try:
        import matplotlib
    except ImportError:  # the numbers are in bench.json and bench.md already
        print("matplotlib is not installed here: no plots (pip install matplotlib)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for op, pass_, dtype in groups(result["rows"]):
        rows = [r for r in result["rows"] if (r["op"], r["pass"], r["dtype"]) == (op, pass_, dtype)]
        fig, ax = plt.subplots(figsize=(7, 4))
        title = f"{op} {pass_} {dtype} on {result['device']} ({result['date']})"
        if "flops" in rows[0]:
            peak = result.get(op, {}).get("peak_tflops", {}).get(dtype)
            # what n is in this pass, where the op's bench says (bench_matmul.XLABELS)
            xlabel = result.get(op, {}).get("xlabels", {}).get(pass_, "n (M = N = K)")
            plots.plot_tflops(rows, peak=peak, ax=ax, title=title, xlabel=xlabel)
        else:
            plots.plot_bandwidth(rows, result["copy"], ax=ax, title=title)
        fig.tight_layout()
        fig.savefig(out_dir / plot_name(op, pass_, dtype), dpi=110)
        plt.close(fig)


# ----------------------------------------------------------------------------------------------


def main(argv=None, bench_dir=HERE):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer sizes (2^24 stays, so the bars are still judged)")
    p.add_argument("--cpu", action="store_true", help="measure the CPU paths with the host timer (exercises the code)")
    p.add_argument("--out", type=Path, help="folder for the results (default: results/<date>-<device>/)")
    p.add_argument("--only", help="comma-separated ops to run (default: every bench_<op>.py)")
    args = p.parse_args(argv)

    if not args.cpu and not torch.cuda.is_available():
        print(
            "bench/run.py: this machine has no CUDA GPU (torch.cuda.is_available() is False), so there are no "
            "kernel bandwidths to measure. Run it on a GPU machine; `--cpu` measures the CPU paths instead, to "
            "exercise the code. What a call costs on the CPU is measured all the same:"
        )
        return per_call_only(args.out or results.machine_dir("cpu"))
    if args.cpu:
        device, name = torch.device("cpu"), cpu_name()
        sizes = CPU_QUICK if args.quick else CPU_SIZES
    else:
        device = torch.device("cuda", torch.cuda.current_device())
        name = torch.cuda.get_device_name(device)
        sizes = GPU_QUICK if args.quick else GPU_SIZES
    date = datetime.date.today().isoformat()
    out_dir = args.out or results.machine_dir(name if device.type == "cuda" else "cpu")
    paths = discover(bench_dir)
    if args.only:
        wanted = set(args.only.split(","))
        paths = [p for p in paths if p.stem.removeprefix("bench_") in wanted]
    print(
        f"bench on {name} ({device}), torch {torch.__version__}, sizes {fmt_n(sizes[0])}..{fmt_n(sizes[-1])}, "
        f"{len(paths)} module(s)"
    )

    bench = Bench(device, sizes, quick=args.quick)
    bars, errors = run_modules(paths, bench)
    print("copy ceiling:")
    copies = measure_copies(bench.rows, device, bench.budget)
    result = {
        "device": name,
        "kind": device.type,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": date,
        "quick": args.quick,
        "sizes": sizes,
        "rows": bench.rows,
        "copy": copies,
        "errors": errors,
        **bench.extra,
    }
    bar_results = evaluate_bars(bench.rows, bars, device.type, copies)
    result["bars"] = [{**bar, "status": status, "detail": detail} for bar, status, detail in bar_results]
    print("per call (bench/calls.py):")
    result["calls"] = calls.measure("cpu") + (calls.measure(device) if device.type == "cuda" else [])

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / "bench.md").write_text(markdown(result, bar_results))
    save_plots(result, out_dir)
    print(f"\nwrote {out_dir}/bench.json, bench.md and {len(groups(bench.rows))} plot(s)")
    for bar, status, detail in bar_results:
        print(f"{status}: {bar_text(bar)} ({detail})")
    for row in result["calls"]:
        print(f"{row['status']}: {calls_text(row)}")
    for e in errors:
        print(f"ERROR: {e['module']} failed (traceback above and in bench.json)")
    return 1 if errors else 0


def calls_text(row):
    return (
        f"per call, {row['op']}{' with requires_grad' if row['grad'] else ''} on {row['device']} at n={row['n']}: "
        f"ops/PyTorch {row['ratio']:.2f}x <= {calls.BAR}x"
    )


def calls_markdown(rows, device, date):
    return (
        f"## Per call\n\nHost time per call on {device} ({date}), median of 15 rounds of 2000 calls, the "
        f"callables taken in turn (bench/calls.py); end to end: CUDA events around one call with the GPU idle "
        f"before it.\n\n{calls.markdown(rows)}\n"
    )


def per_call_only(out_dir):
    """The per-call table alone, on the CPU (a machine without a GPU): results/<date>-cpu/calls.json and calls.md."""
    rows = calls.measure("cpu")
    date = datetime.date.today().isoformat()
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {"device": cpu_name(), "torch": torch.__version__, "date": date, "calls": rows}
    (out_dir / "calls.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / "calls.md").write_text(
        f"# What a call costs: {cpu_name()}, {date}\n\ntorch {torch.__version__}.\n\n"
        + calls_markdown(rows, cpu_name(), date)
    )
    print(f"\nwrote {out_dir}/calls.json and calls.md")
    for row in rows:
        print(f"{row['status']}: {calls_text(row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
