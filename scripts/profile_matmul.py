"""The float32 ladder of kernels/matmul/matmul.cu under Nsight Compute's hardware counters, on a GPU machine: why each
rung is as fast as it is, in numbers notebook 07 shows (shared-memory wavefronts and bank conflicts per FMA, the FMA
pipe's busy share, occupancy, and what the warps stall on).

    python scripts/profile_matmul.py     (runs itself under ncu; writes results/<date>-<gpu>/ncu-matmul.json, or
                                          $OUT/ncu-matmul.json where OUT is set)

One call of each version at 4096^3 (ncu replays each kernel once per group of counters). `--clock-control none`
leaves the clocks as they are, as every other timing of the kit does."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ["reg1d", "reg2d", "vec", "warptile", "pipelined"]
N = 4096
METRICS = {
    "time_s": "gpu__time_duration.sum",  # ns
    "ffma_thread_inst": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "shared_ld_inst": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_ld_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_st_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "fma_pipe_pct": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram_read_bytes": "dram__bytes_read.sum",
    **{
        f"stall_{r}": f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
        for r in (
            "mio_throttle",
            "short_scoreboard",
            "long_scoreboard",
            "barrier",
            "math_pipe_throttle",
            "not_selected",
            "wait",
            "dispatch_stall",
        )
    },
}

CHILD = f"""
import torch
from loader import ops
a, b = torch.randn({N}, {N}, device="cuda"), torch.randn({N}, {N}, device="cuda")
for v in {VERSIONS!r}:
    ops.matmul(a, b, version=v)
torch.cuda.synchronize()
"""


def main():
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}"}
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from loader import ops; import torch; "
            "ops.matmul(torch.ones(2, 2, device='cuda'), torch.ones(2, 2, device='cuda'))",
        ],
        env=env,
        check=True,
    )
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--csv",
        "--page",
        "raw",
        "--print-kernel-base",
        "demangled",
        "-k",
        "regex:matmul_(reg1d|reg2d|vec|warptile)",
        "--metrics",
        ",".join(METRICS.values()),
        sys.executable,
        "-c",
        CHILD,
    ]
    t0 = time.time()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(f"ncu: rc {run.returncode} in {time.time() - t0:.0f}s", flush=True)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:])
        sys.exit(1)
    lines = run.stdout[run.stdout.index('"ID"') :]  # the CSV, after the program's and ncu's own lines
    rows = list(csv.DictReader(io.StringIO(lines)))
    kernels = {}
    rows = [r for r in rows if r.get("Kernel Name", "").strip()]  # the units row has none
    if len(rows) != len(VERSIONS):
        sys.exit(f"expected {len(VERSIONS)} profiled kernels, one per version, got {len(rows)}")
    for v, row in zip(VERSIONS, rows):  # the child launches them in this order, and ncu lists launches in order
        got = {"kernel": row["Kernel Name"]}
        for key, metric in METRICS.items():
            raw = row.get(metric, "").replace(",", "")
            try:
                got[key] = float(raw)
            except ValueError:
                got[key] = None
        if got.get("time_s") is not None:
            got["time_s"] /= 1e9
        ffma_warp = (got.get("ffma_thread_inst") or 0) / 32
        if ffma_warp:
            got["shared_ld_wavefronts_per_ffma"] = (got.get("shared_ld_wavefronts") or 0) / ffma_warp
            got["shared_ld_conflicts_per_ffma"] = (got.get("shared_ld_bank_conflicts") or 0) / ffma_warp
        if got.get("time_s"):
            got["tflops"] = 2 * N**3 / got["time_s"] / 1e12
        kernels[v] = got
        print(v, {k: round(x, 3) if isinstance(x, float) else x for k, x in got.items()}, flush=True)

    import torch  # noqa: E402 (not needed before: ncu runs its own process)

    sys.path.insert(0, str(ROOT))
    from kit import results  # noqa: E402

    out = {
        "device": torch.cuda.get_device_name(),
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "n": N,
        "dtype": "float32",
        "metrics": METRICS,
        "kernels": kernels,
        "ncu": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
    }
    folder = Path(os.environ["OUT"]) if os.environ.get("OUT") else results.machine_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ncu-matmul.json").write_text(json.dumps(out, indent=1))
    print("wrote", folder / "ncu-matmul.json")


if __name__ == "__main__":
    main()
