"""Measure the loader where it runs: `import loader` overhead, a cold build of add2, and how long a kernel edit
takes to show up in the same process (a .cu edit where there is a GPU, a CPU kernel edit everywhere).

Writes results/<date>-<machine>/loader.json and prints a summary. Takes ~1 min on a GPU machine, ~2 min on 2 cores.
Run: python scripts/measure_loader.py
"""

import datetime
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit import results  # noqa: E402


def py(code, env=None):
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=ROOT,
        timeout=900,
    )
    if r.returncode:
        raise RuntimeError(r.stdout + r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def import_overhead(reps=5):
    code = """
        import time, json
        t0 = time.perf_counter(); import torch; t1 = time.perf_counter()
        from loader import ops; t2 = time.perf_counter()
        print(json.dumps([t1 - t0, t2 - t1]))
    """
    runs = [py(code) for _ in range(reps)]
    return {
        "import_torch_s": statistics.median(r[0] for r in runs),
        "import_loader_after_torch_s": statistics.median(r[1] for r in runs),
    }


BUILDS = """
    import json, os, shutil, time, torch
    from pathlib import Path
    from kit.notebook import edit
    import loader
    root, tmp = Path(os.environ["KIT_ROOT"]), Path(os.environ["KIT_TMP"])
    shutil.copytree(root / "kernels", tmp / "kernels")
    times_csv = tmp / "nvcc-time.csv"  # nvcc --time: each phase of each nvcc run (cudafe++, cicc, ptxas, gcc, ...)
    with open(tmp / "kernels/add2/op.py", "a") as f:
        f.write(chr(10) + f"CUDA_FLAGS = ['--time={times_csv}']" + chr(10))
    lab = loader.Ops(tmp / "kernels", build_dir=tmp / "build")
    dev = "cuda" if loader.cuda_build_wanted() else "cpu"
    a, b = torch.ones(1000, device=dev), torch.ones(1000, device=dev)
    t0 = time.perf_counter(); lab.add2(a, b); cold = time.perf_counter() - t0
    out = {"device": dev, "cold_build_s": cold, "cuda_edit_to_result_s": [], "cpu_edit_to_result_s": [],
           "cuda_edit_breakdown": []}
    ninja_log = next((tmp / "build").glob("*/add2/.ninja_log"))

    def ninja_steps(start):  # (output, seconds) of what ninja ran since byte `start` of its log
        lines = ninja_log.read_bytes()[start:].decode().splitlines()
        return {ln.split(chr(9))[3]: (int(ln.split(chr(9))[1]) - int(ln.split(chr(9))[0])) / 1e3
                for ln in lines if ln.count(chr(9)) >= 4}

    def nvcc_phases(start):  # seconds per nvcc phase since byte `start` of the --time file
        phases = {}
        if times_csv.exists():
            for row in times_csv.read_bytes()[start:].decode().splitlines():
                cols = [c.strip().strip('"') for c in row.split(",")]
                if len(cols) >= 8 and cols[-1] == "ms":
                    phases[cols[1]] = phases.get(cols[1], 0) + float(cols[-2]) / 1e3
        return phases
    k = tmp / "kernels" / "add2"
    prev_cu, prev_cpu = "ld(x.v[k]) + ", "load(a[i]) + "
    for m in (2, 3, 4, 5, 6):  # a = b = 1, so the edited kernel gives m + 1
        if dev == "cuda":
            log_at, csv_at = ninja_log.stat().st_size, times_csv.stat().st_size if times_csv.exists() else 0
            edit(k / "add2.cu", prev_cu, f"ld(x.v[k]) * {m} + "); prev_cu = f"ld(x.v[k]) * {m} + "
            t0 = time.perf_counter(); c = lab.add2(a, b); torch.cuda.synchronize()
            total = time.perf_counter() - t0
            out["cuda_edit_to_result_s"].append(total)
            steps = ninja_steps(log_at)
            nvcc_s, link_s = steps.get("add2.cuda.o", 0), steps.get("labkit_add2.so", 0)
            out["cuda_edit_breakdown"].append({"total_s": total, "nvcc_s": nvcc_s, "link_s": link_s,
                                               "nvcc_phases_s": nvcc_phases(csv_at),
                                               "rest_s (cpp_extension.load around ninja, dlopen, first launch)":
                                                   total - nvcc_s - link_s})
            assert float(c[0]) == m + 1, float(c[0])
        edit(k / "add2_cpu.cpp", prev_cpu, f"load(a[i]) * {m} + "); prev_cpu = f"load(a[i]) * {m} + "
        t0 = time.perf_counter(); c = lab.add2(a.cpu(), b.cpu())
        out["cpu_edit_to_result_s"].append(time.perf_counter() - t0)
        assert float(c[0]) == m + 1, float(c[0])
    f = torch.ops.labkit.add2
    for name, fn in [("raw_op_call_us", lambda: f(a, b)), ("ops_call_us", lambda: lab.add2(a, b))]:
        for _ in range(100): fn()
        t0 = time.perf_counter()
        for _ in range(2000): fn()
        out[name] = (time.perf_counter() - t0) / 2000 * 1e6
    print(json.dumps(out))
"""


def builds(tmp):
    """Cold build in a fresh process, then three edits of a kernel, each timed from the edit to the new result; through
    a compiler cache of its own, empty, as a user's first build goes through theirs (building/compiler_cache.py)."""
    return py(BUILDS, env={"KIT_ROOT": str(ROOT), "KIT_TMP": str(tmp), "LABKIT_CACHE_DIR": str(tmp / "compiler-cache")})


def main():
    import tempfile

    import torch

    from building.toolchain import fast_linker, safe_cxx

    res = {
        "date": datetime.date.today().isoformat(),
        "machine": results.slug(results.machine_name()),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "MAX_JOBS": os.environ.get("MAX_JOBS"),
        "TORCH_CUDA_ARCH_LIST": os.environ.get("TORCH_CUDA_ARCH_LIST"),
        "linker": fast_linker(safe_cxx()[0] or "c++") or "the compiler's default (GNU ld)",
    }
    res.update(import_overhead())
    with tempfile.TemporaryDirectory() as tmp:
        res.update(builds(Path(tmp)))
    out = results.machine_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "loader.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    print(f"wrote {out / 'loader.json'}")


if __name__ == "__main__":
    main()
