"""Where a .cu edit's time goes, and what each way of cutting it saves: nvcc's flags and the linker, each variant
timed side by side on the same files (median of REPS runs), on the machine it runs on.

The loader's own edit-to-result time (with whatever it chose) is scripts/measure_loader.py; this script is the
experiment behind that choice. It builds add2 once in a scratch folder, reads the exact nvcc and link commands from
its build.ninja, then reruns them with one change at a time:
  nvcc:  -O3 (nvcc's -O is the optimisation of the host code only: the launchers; device code is always optimised),
         -O1, -O0; each alone and with --threads 0 (device and host steps of one file in parallel); each with
         -std=c++20 (what cpp_extension gives nvcc in newer torch, 2.14 here) and -std=c++17 (a kernel file includes no torch
         header, so it may take the lighter standard library of C++17).
  parallel: the loader's flags (-O0 --threads 0 -std=c++17 -D_GLIBCXX_BITS_SPECFUN_H), through plain nvcc and through
         the loader's driver (building/parallel_nvcc.py: nvcc's own steps, the device branch beside the host branch),
         each also without the define ("with specfun": libstdc++'s C++17 special math functions, which <cmath> then
         includes through cuda_runtime.h), interleaved.
  headers: nvcc on a one-line kernel alone, with cuda_bf16.h (which includes cuda_fp16.h; kernels/common/
         cuda_half_types.cuh includes both, for matmul; cuda_types.cuh, which every other kernel file includes, has
         16-bit types of its own for this cost), and with the kit's kit.h: what every .cu file pays before its own code.
  link:  the default linker (GNU ld.bfd); gold, lld and mold where they are installed.
  edit:  an edit of add2.cu to its result through the loader, with its flags and without the define above.
Writes results/<date>-<machine>/edit_time.json and prints a table. ~3 min.
Run: python scripts/experiment_edit_time.py
"""

import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import loader  # noqa: E402
from building import parallel_nvcc  # noqa: E402
from building.toolchain import safe_cxx  # noqa: E402
from kit import results  # noqa: E402

REPS = int(os.environ.get("REPS", 7))


def timed(cmd, cwd):
    runs = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True)
        runs.append(time.perf_counter() - t0)
        if r.returncode:
            return {"error": (r.stdout + r.stderr)[-400:]}
    return {"median_s": statistics.median(runs), "min_s": min(runs), "runs_s": runs}


def interleaved(cmds, cwd):
    """{name: timed} for shell commands run in turn, REPS rounds after one to warm up: on a noisy machine, variants
    compared side by side see the same noise."""
    runs = {name: [] for name in cmds}
    for rep in range(REPS + 1):
        for name, cmd in cmds.items():
            t0 = time.perf_counter()
            r = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True)
            if r.returncode:
                return {name: {"error": (r.stdout + r.stderr)[-400:]}}
            if rep:
                runs[name].append(time.perf_counter() - t0)
    return {
        name: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "runs_s": v}
        for name, v in runs.items()
    }


def edits_through_loader(tmp):
    """An edit of add2.cu to its result through the loader (nvcc through its driver, the link, the load), REPS edits
    each, interleaved: with the loader's nvcc flags, and with them less -D_GLIBCXX_BITS_SPECFUN_H (two Ops, each with
    a build folder of its own, on one copy of the kernels: each call after an edit rebuilds that Ops' add2)."""
    real_flags = loader._Op.flags

    def with_specfun(op, cuda, nvcc=False):
        return [f for f in real_flags(op, cuda, nvcc) if f != loader.NO_SPECIAL_MATH]

    ways = {"loader's flags": real_flags, "with specfun": with_specfun}
    labs, runs = {}, {name: [] for name in ways}
    cu = tmp / "kernels/add2/add2.cu"
    text = cu.read_text()
    try:
        for rep in range(REPS + 1):
            for i, (name, flags) in enumerate(ways.items()):
                loader._Op.flags = flags
                lab = labs.setdefault(name, loader.Ops(tmp / "kernels", build_dir=tmp / f"build-edit-{i}"))
                cu.write_text(text + f"// edit {rep}, {name}\n")
                t0 = time.perf_counter()
                lab.add2(torch.ones(4), torch.ones(4))
                if rep:  # the first round builds each from cold
                    runs[name].append(time.perf_counter() - t0)
    finally:
        loader._Op.flags = real_flags
        cu.write_text(text)
    return {
        name: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "runs_s": v}
        for name, v in runs.items()
    }


def ninja_vars(text):
    return {m.group(1): m.group(2) for m in re.finditer(r"^(\w+) = (.*)$", text, re.M)}


def main():
    # no compiler cache (not even the user's own, building/compiler_cache.py): build.ninja's nvcc is then nvcc itself,
    # and each variant below compiles, where through ccache the second run of a command would be a cache hit
    os.environ["LABKIT_CACHE_DIR"] = ""
    cuda = loader.cuda_build_wanted()
    out = {
        "date": datetime.date.today().isoformat(),
        "machine": results.slug(results.machine_name()),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "reps": REPS,
        "cuda": cuda,
        "linkers_found": {ld: shutil.which(ld) for ld in ("ld.bfd", "ld.gold", "ld.lld", "ld.mold", "mold")},
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copytree(ROOT / "kernels", tmp / "kernels")
        lab = loader.Ops(tmp / "kernels", build_dir=tmp / "build")
        lab.add2(torch.ones(4), torch.ones(4))
        bdir = next((tmp / "build").glob("*/add2"))
        v = ninja_vars((bdir / "build.ninja").read_text())
        cxx = safe_cxx()[0] or "c++"  # the compiler the loader links with
        objs = " ".join(sorted(p.name for p in bdir.glob("*.o")))
        # the link as ninja ran it, minus any linker the loader chose, so each variant names its own
        ldflags = re.sub(r"\s-fuse-ld=\S+", "", v["ldflags"])
        out["link"] = {}
        for ld in ("bfd", "gold", "lld", "mold"):
            if ld != "bfd" and not (shutil.which(f"ld.{ld}") or (ld == "mold" and shutil.which("mold"))):
                continue
            out["link"][ld] = timed(f"{cxx} {objs} {ldflags} -fuse-ld={ld} -o /tmp/labkit-link-{ld}.so", bdir)
        if cuda:
            src = str(tmp / "kernels/add2/add2.cu")
            base = re.sub(rf"\s(-O\d|--threads \d+|-std=\S+|{loader.NO_SPECIAL_MATH})(?=\s|$)", "", v["cuda_cflags"])
            # the real nvcc: build.ninja names the loader's driver (building/parallel_nvcc.py), which runs it
            real = str(Path(loader.cpp_extension().CUDA_HOME or "/usr/local/cuda") / "bin" / "nvcc")
            nvcc = f"{real} -MD -MF x.d {base} {{flags}} -c {shlex.quote(src)} -o x.o"
            out["nvcc_add2_cu"] = {
                flags: timed(nvcc.format(flags=flags), bdir)
                for flags in [
                    f"{o}{t} -std=c++{std}"
                    for std in (20, 17)
                    for o in ("-O3", "-O1", "-O0")
                    for t in ("", " --threads 0")
                ]
            }
            empty = tmp / "empty.cu"
            empty.write_text("__global__ void k(float* p) { p[0] = 1; }\n")
            out["nvcc_empty_cu"] = timed(f"{real} {base} -O3 -std=c++20 -c {empty} -o x.o", bdir)
            before = "-O0 --threads 0 -std=c++17"
            loader_flags = f"{before} {loader.NO_SPECIAL_MATH}"
            driver = parallel_nvcc.wrapper(tmp / "parallel-nvcc", real)[1]
            driver_env = " ".join(f"{k}={shlex.quote(x)}" for k, x in driver.items())
            runner = f"{driver_env} {shlex.quote(str(tmp / 'parallel-nvcc' / 'nvcc'))}"
            out["nvcc_add2_cu_parallel"] = interleaved(
                {
                    f"{how}{note}": (f"LABKIT_PARALLEL_NVCC=1 {runner}" if how == "parallel driver" else real)
                    + nvcc.format(flags=flags)[len(real) :]
                    for how in ("plain nvcc", "parallel driver")
                    for note, flags in [("", loader_flags), (", with specfun", before)]
                },
                bdir,
            )
            headers = {
                "one kernel": "",
                "+ cuda_bf16.h (and cuda_fp16.h)": "#include <cuda_bf16.h>\n",
                "+ kit.h": '#include "kit.h"\n',
            }
            cmds = {}
            for i, (name, include) in enumerate(headers.items()):
                (tmp / f"h{i}.cu").write_text(include + "__global__ void k(float* p) { p[0] = 1; }\n")
                cmds[name] = f"{real} {base} {loader_flags} -c {tmp / f'h{i}.cu'} -o h.o"
            out["nvcc_headers"] = interleaved(cmds, bdir)
            out["edit_through_loader"] = edits_through_loader(tmp)
    dest = results.machine_dir()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "edit_time.json").write_text(json.dumps(out, indent=1) + "\n")
    for part in ("link", "nvcc_add2_cu", "nvcc_add2_cu_parallel", "nvcc_headers", "edit_through_loader"):
        for name, r in out.get(part, {}).items():
            print(
                f"{part:21s} {name:30s} "
                + (f"{r['median_s']:.3f} s (min {r['min_s']:.3f})" if "median_s" in r else r["error"])
            )
    if "nvcc_empty_cu" in out:
        print(f"nvcc of an empty kernel file: {out['nvcc_empty_cu'].get('median_s', 0):.3f} s")
    print(f"wrote {dest / 'edit_time.json'}")


if __name__ == "__main__":
    main()
