"""Plots of measured rates against size, for `make bench` and notebooks 02, 04 and 06: GB/s for the memory-bound ops
(against the copy ceiling) and TFLOP/s for matmul (against the device's peak), a median line and quartile band per
implementation.
"""

from kit.timing import gbps, tflops

IMPL_ORDER = ["ours", "torch", "seed"]


def _plot_rates(rows, rate, ax, title):
    """One median line and quartile band per implementation (rate(row, seconds) -> y), ours and torch first, the
    others in the order they were measured (the lesson's versions come simplest first). Returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    first = {}
    for i, r in enumerate(rows):
        first.setdefault(r["impl"], i)
    for impl in sorted(first, key=lambda i: (IMPL_ORDER.index(i) if i in IMPL_ORDER else 99, first[i])):
        mine = sorted((r for r in rows if r["impl"] == impl), key=lambda r: r["n"])
        ns = [r["n"] for r in mine]
        ax.plot(ns, [rate(r, r["median_s"]) for r in mine], marker="o", markersize=3, label=impl)
        ax.fill_between(ns, [rate(r, r["q75_s"]) for r in mine], [rate(r, r["q25_s"]) for r in mine], alpha=0.25)
    ax.set_xscale("log", base=2)
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def plot_bandwidth(rows, copies, ax=None, title=None):
    """GB/s against element count (log2 axis) for one op/pass/dtype: a median line with a quartile band per
    implementation, and the copy ceiling for the same bytes as a dashed line.

    rows: dicts with n, impl, nbytes, median_s, q25_s, q75_s (bench.json's rows); copies: dicts with nbytes and
    median_s (bench.json's copy list)."""
    ax = _plot_rates(rows, lambda r, s: gbps(r["nbytes"], s), ax, title)
    copy_by_bytes = {c["nbytes"]: c for c in copies}
    ceiling = sorted({(r["n"], r["nbytes"]) for r in rows if r["nbytes"] in copy_by_bytes})
    if ceiling:
        ax.plot(
            [n for n, _ in ceiling],
            [gbps(b, copy_by_bytes[b]["median_s"]) for _, b in ceiling],
            "k--",
            linewidth=1,
            label="copy (same bytes)",
        )
    ax.set_xlabel("elements (n)")
    ax.set_ylabel("GB/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_tflops(rows, peak=None, ax=None, title=None, xlabel="n (M = N = K)"):
    """TFLOP/s against size for one compute-bound op/dtype (matmul: n = M = N = K unless xlabel says otherwise, log2
    axis): a median line with a quartile band per implementation, and the device's peak as a dashed line when known.

    rows: dicts with n, impl, flops, median_s, q25_s, q75_s (bench.json's matmul rows)."""
    ax = _plot_rates(rows, lambda r, s: tflops(r["flops"], s), ax, title)
    if peak:
        ax.axhline(peak, color="k", linestyle="--", linewidth=1, label=f"peak {peak:.0f} TFLOP/s")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("TFLOP/s")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax
