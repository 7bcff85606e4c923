"""Timelines of a timed run, for notebooks 04 and 06: torch.profiler's record of a host_time run turned into spans
(timed region, launches, synchronizations on the host; the GPU's kernels), and drawn as one row per kind of activity,
in place of the Nsight Systems screenshots a tutorial would show. ToyStream (kit.timing) makes spans in the same rows.
"""

import json
import tempfile
from pathlib import Path

from kit.timing import as_device, fmt_time, host_time, synchronizer

# Rows of a timeline picture, top to bottom: what the host does above, what the GPU does below (as in Nsight Systems)
ROWS = ["timed (host)", "op (host)", "launch (host)", "sync (host)", "kernel (GPU)"]
ROW_COLORS = {
    "timed (host)": "#4c72b0",
    "op (host)": "#8172b2",
    "launch (host)": "#55a868",
    "sync (host)": "#dd8452",
    "kernel (GPU)": "#c44e52",
}

_profiler_warm = set()


def profile_timeline(fn, sync="both", device=None, warmup=3, reps=3):
    """Run host_time(fn, sync) under torch.profiler and return its spans: [row, start_s, end_s, label], times from
    the start of the run. Rows (ROWS): the timed regions and warm-up, host-side launches and synchronizations,
    and the GPU's kernels (CPU ops instead where there is no GPU)."""
    from torch.profiler import ProfilerActivity, profile

    dev = as_device(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    if dev.type not in _profiler_warm:  # the first profile of a process pays for starting the tracer: not here
        with profile(activities=activities):
            fn()
            synchronizer(dev)()
        _profiler_warm.add(dev.type)
    with profile(activities=activities) as prof:
        host_time(fn, sync, device=dev, warmup=warmup, reps=reps, annotate=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
    return spans_from_trace(trace)


GPU_CATEGORIES = ("kernel", "gpu_memset", "gpu_memcpy")


def _row_of(event, has_gpu):
    cat, name = event.get("cat", ""), event.get("name", "")
    if cat == "user_annotation" and (name.startswith("timed #") or name == "warm-up"):
        return "timed (host)"
    if cat in ("cuda_runtime", "cuda_driver"):
        if "Synchronize" in name:
            return "sync (host)"
        if "Launch" in name or "Memset" in name or "Memcpy" in name:
            return "launch (host)"
    if cat in GPU_CATEGORIES:
        return "kernel (GPU)"
    if cat == "cpu_op" and not has_gpu:
        return "op (host)"
    return None


def spans_from_trace(trace):
    """Spans [row, start_s, end_s, label] from a Chrome trace as torch.profiler exports it (times there are in
    microseconds, on one clock for host and GPU), keeping what falls within host_time's run."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e and "ts" in e]
    runs = [e for e in events if e.get("cat") == "user_annotation" and e.get("name") == "host_time"]
    if runs:
        t_start, t_end = runs[0]["ts"], runs[0]["ts"] + runs[0]["dur"]
    else:
        t_start = min((e["ts"] for e in events), default=0.0)
        t_end = max((e["ts"] + e["dur"] for e in events), default=0.0)
    has_gpu = any(e.get("cat") in GPU_CATEGORIES for e in events)
    spans = []
    for e in events:
        row = _row_of(e, has_gpu)
        start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        if row is None or end < t_start or start > t_end:
            continue
        spans.append([row, (start - t_start) / 1e6, (end - t_start) / 1e6, e.get("name", "")])
    spans.sort(key=lambda s: (ROWS.index(s[0]), s[1]))
    return spans


def rebase(spans):
    """Spans with times counted from the earliest one (ToyStream's spans are on the raw perf_counter clock)."""
    t0 = min(s[1] for s in spans)
    return sorted(([s[0], s[1] - t0, s[2] - t0, s[3]] for s in spans), key=lambda s: (ROWS.index(s[0]), s[1]))


def kernels_inside(spans, slack=2e-6):
    """For each timed call of a timeline, how many kernels ran entirely inside it: 1 when the timer brackets
    its kernel, 0 when it timed only the launch, more when it also waited for earlier work. `slack` allows for
    the profiler's alignment of the GPU's clock with the host's."""
    kernels = [s for s in spans if s[0] == "kernel (GPU)"]
    return [
        sum(1 for k in kernels if k[1] >= t[1] - slack and k[2] <= t[2] + slack)
        for t in spans
        if t[0] == "timed (host)" and t[3].startswith("timed")
    ]


def draw_timeline(spans, ax=None, title=None):
    """Draw spans as horizontal bars, one row per kind of activity: host rows on top, the GPU at the bottom.
    Each timed call is labelled with the time the host clock read for it."""
    import matplotlib.pyplot as plt

    rows = [r for r in ROWS if any(s[0] == r for s in spans)]
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 0.6 + 0.5 * len(rows)))
    end = max(s[2] for s in spans)
    scale, unit = (1e3, "ms") if end > 5e-3 else (1e6, "us")
    min_width = end * scale / 400  # a 2 us launch stays visible on a 2 ms axis
    for y, row in enumerate(rows):
        mine = [s for s in spans if s[0] == row]
        colors = ["#bbbbbb" if s[3] == "warm-up" else ROW_COLORS[row] for s in mine]
        ax.broken_barh(
            [(s[1] * scale, max((s[2] - s[1]) * scale, min_width)) for s in mine],
            (y - 0.35, 0.7),
            facecolors=colors,
            edgecolor="white",
            linewidth=0.3,
        )
        if row == "timed (host)":
            for s in mine:
                if (s[2] - s[1]) < end / 15:  # no room for a label: it would cover its neighbours'
                    continue
                text = "warm-up" if s[3] == "warm-up" else fmt_time(s[2] - s[1])
                ax.text((s[1] + s[2]) / 2 * scale, y, text, ha="center", va="center", fontsize=7, color="black")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"time ({unit})")
    readings = [fmt_time(s[2] - s[1]) for s in spans if s[0] == "timed (host)" and s[3].startswith("timed")]
    if title or readings:
        what = f"host clock read {', '.join(readings[:6])}" if readings else ""
        ax.set_title(f"{title}; {what}" if title and what else title or what, fontsize=10, loc="left")
    return ax
