"""Which GPUs a process sees, and running risky GPU code where it cannot take the notebook down.

Used by 03_multi_gpu.ipynb and its tests. A kernel that touches another GPU's memory without peer access fails
with "an illegal memory access was encountered", and that error is sticky: every later CUDA call of the process
fails too, so a Jupyter kernel would have to restart. run_isolated() runs such code in a child process instead
and reports what happened.
"""

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import torch

import loader
from kit import results
from kit.programs import REPORT_MARK

PROGRAMS = loader.ROOT / "kit" / "programs"


def gpus():
    """One dict per visible GPU: index (as this process numbers it), name, capability, memory, SMs, UUID."""
    out = []
    for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
        p = torch.cuda.get_device_properties(i)
        out.append(
            {
                "index": i,
                "name": p.name,
                "capability": f"{p.major}.{p.minor}",
                "memory_gib": round(p.total_memory / 2**30),
                "sms": p.multi_processor_count,
                "uuid": str(getattr(p, "uuid", "?")),
            }
        )
    return out


def peer_access():
    """peer[i][j]: can GPU i read and write GPU j's memory directly (NVLink or PCIe peer-to-peer)?"""
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [[i == j or torch.cuda.can_device_access_peer(i, j) for j in range(n)] for i in range(n)]


def show_gpus():
    rows = gpus()
    if not rows:
        print("no GPU visible to this process (torch.cuda.device_count() == 0)")
        return rows
    print(
        f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}; current device: "
        f"{torch.cuda.current_device()}"
    )
    for g in rows:
        print(
            f"cuda:{g['index']}  {g['name']}  sm_{g['capability'].replace('.', '')}  {g['memory_gib']} GiB  "
            f"{g['sms']} SMs  {g['uuid'][:13]}"
        )
    peer = peer_access()
    if len(rows) > 1:
        print("peer access (row reads column):")
        for i, row in enumerate(peer):
            print(f"  cuda:{i}  " + "  ".join("yes" if p else "no " for p in row))
    return rows


@dataclass
class Isolated:
    """What a child process did: its exit code, output, and a one-line verdict."""

    returncode: int
    stdout: str
    stderr: str
    result: object  # whatever the child passed to report(...), or None
    timed_out: float = 0.0  # the time limit, where the child ran past it and was killed

    @property
    def verdict(self):
        if self.timed_out:
            return f"ran past its {self.timed_out:g} s limit and was killed"
        if self.returncode < 0:
            return f"crashed (signal {-self.returncode})"
        if "illegal memory access" in self.stderr or "illegal memory access" in self.stdout:
            return "illegal memory access (a sticky CUDA error: this process could not use the GPU any more)"
        if self.returncode != 0:
            lines = [ln for ln in self.stderr.strip().splitlines() if ln.strip()]
            return "failed: " + (lines[-1] if lines else f"exit code {self.returncode}")
        return "ran to the end"


def run_isolated(code, env=None, timeout=300, wrapper=()):
    """Run Python `code` in a child process with the kit importable and return an Isolated.

    The child may call report(obj) (already defined for it) to send one JSON-able result back. wrapper: a command
    that runs the child Python, e.g. ["compute-sanitizer", "--tool", "memcheck"]."""
    prelude = "from kit.programs import report\n"
    return _child(["-c", prelude + textwrap.dedent(code)], env, timeout, wrapper)


def run_program(name, *args, env=None, timeout=300, wrapper=()):
    """Run the child program kit/programs/<name>.py with `args` (as strings) and return an Isolated, as run_isolated
    does for a string of code."""
    return _child([str(PROGRAMS / f"{name}.py"), *map(str, args)], env, timeout, wrapper)


def _child(python_args, env, timeout, wrapper):
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(loader.ROOT)] + sys.path[1:]), **(env or {})}
    try:
        r = subprocess.run(
            [*wrapper, sys.executable, *python_args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=loader.ROOT,
        )
    except subprocess.TimeoutExpired as e:  # what it printed until then says where it was (captured as bytes)
        out, err = (x.decode(errors="replace") if isinstance(x, bytes) else x or "" for x in (e.stdout, e.stderr))
        return Isolated(-9, out, err, None, timed_out=timeout)
    result = None
    for line in r.stdout.splitlines():
        if line.startswith(REPORT_MARK):
            result = json.loads(line[len(REPORT_MARK) :])
    stdout = "\n".join(ln for ln in r.stdout.splitlines() if not ln.startswith(REPORT_MARK))
    return Isolated(r.returncode, stdout, r.stderr, result)


def unguarded_case(version="unguarded", data=1, current=0, peer_copy_first=False):
    """The wrong-GPU scenario of the add2 tutorial's multi-GPU use: tensors on cuda:{data}, cuda:{current} current,
    add2 of the given version, in a child (kit/programs/unguarded.py).

    peer_copy_first: make a cross-device copy first, which makes PyTorch enable peer access between the two
    GPUs (lazily, on the first such copy); then a wrong-GPU kernel may silently read the other GPU's memory."""
    return run_program("unguarded", version, data, current, *(["peer"] if peer_copy_first else []))


def record(out_dir=None):
    """Run the lesson's two-GPU cases and write results/<date>-<gpu>-x<N>/multi_gpu.json, which 03_multi_gpu.ipynb
    shows on machines with fewer GPUs. Run on a machine with two or more GPUs: `python -m kit.devices`."""
    import datetime
    import time
    from pathlib import Path

    n = torch.cuda.device_count()
    if n < 2:
        raise SystemExit(f"needs two GPUs; {n} visible")
    rec = {
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "gpus": gpus(),
        "peer_access": peer_access(),
        "cases": {},
    }
    for name, kwargs in [
        ("unguarded, no peer access yet", {}),
        ("unguarded, after a cross-device copy", {"peer_copy_first": True}),
        ("set_device (the blog post's fix)", {"version": "set_device"}),
        ("guarded (ops.add2)", {"version": "fast"}),
    ]:
        r = unguarded_case(data=1, current=0, **kwargs)
        rec["cases"][name] = {"verdict": r.verdict, "result": r.result, "stderr_tail": r.stderr[-600:]}
        print(f"{name}: {r.verdict}; {r.result}")
    cycles = int(torch.cuda.get_device_properties(1).clock_rate * 1000 * 0.1)
    with torch.cuda.device(0):
        with torch.cuda.device(1):
            torch.cuda._sleep(cycles)
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        t_current = time.perf_counter() - t0
        torch.cuda.synchronize(1)
        t_dev1 = time.perf_counter() - t0
    rec["sync"] = {"kernel_on": "cuda:1", "current": "cuda:0", "synchronize()_s": t_current, "synchronize(1)_s": t_dev1}
    print(f"synchronize() returned after {t_current * 1e3:.2f} ms; synchronize(1) after {t_dev1 * 1e3:.1f} ms")
    out = Path(out_dir or results.machine_dir(torch.cuda.get_device_name(0), suffix=f"-x{n}"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "multi_gpu.json").write_text(json.dumps(rec, indent=1) + "\n")
    print(f"wrote {out / 'multi_gpu.json'}")


if __name__ == "__main__":
    record()
