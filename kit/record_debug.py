"""`python -m kit.record_debug`: run the GPU cases of 05_debugging.ipynb on this machine and write
results/<date>-<gpu>/debug.json, which the notebook shows, labelled with machine and date, where there is no GPU (or no
compute-sanitizer): show_recorded(case). Needs a GPU; uses compute-sanitizer where it is installed. A few minutes; the
file is rewritten after every case, so a run cut short keeps what it recorded. --no-builds: skip timing the three ways
to build for CUDA (the last case, about a minute or two)."""

import json
import subprocess
import sys
from pathlib import Path

import torch

import loader
from kit import results
from kit.debugging import (
    OOB_LINE,
    RACE_READ_LINE,
    RACE_WRITE_LINE,
    STEPS,
    oob_into_a_neighbour,
    oob_run,
    printed,
    printf_run,
    race_run,
    where,
)
from kit.fast_math import fast_math_effect
from kit.resources import ptx_counts, ptxas_report, resource_usage, tool
from kit.sanitizers import MEMCHECK_PROGRAM, RACECHECK_PROGRAM, findings, sanitize

ROOT = loader.ROOT
RECORD = "debug.json"


def record(out_dir=None, builds=True):
    """Run every GPU case of 05_debugging.ipynb and write results/<date>-<gpu>/debug.json, which the notebook shows on
    machines without a GPU or without compute-sanitizer. Run on a GPU machine: `python -m kit.record_debug`."""
    import datetime
    import platform
    import time

    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    t_start = time.perf_counter()
    gpu = torch.cuda.get_device_name(0)
    rec = {
        "date": datetime.date.today().isoformat(),
        "gpu": gpu,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cases": {},
    }
    out = Path(out_dir or results.machine_dir(gpu))
    out.mkdir(parents=True, exist_ok=True)
    print(f"recording on {gpu}, torch {torch.__version__}, into {out / 'debug.json'}", flush=True)
    loader.build("debug_lab")  # once, here, so that the children only load it

    def case(name, fn):
        t0 = time.perf_counter()
        try:
            value = fn()
        except Exception as e:  # keep going: one failed case must not lose the others
            value = {"failed": f"{type(e).__name__}: {e}"[-3000:]}
        rec["cases"][name] = value
        rec["seconds"] = round(time.perf_counter() - t_start, 1)
        # written after every case: a run stopped half way (a time limit) still leaves what it recorded
        (out / "debug.json").write_text(json.dumps(rec, indent=1) + "\n")
        print(f"-- {name} ({time.perf_counter() - t0:.1f} s): {json.dumps(value)[:600]}", flush=True)

    def isolated(r, step=None):
        d = {
            "verdict": r.verdict,
            "returncode": r.returncode,
            "result": r.result,
            "stdout_tail": r.stdout[-1500:],
            "stderr_tail": r.stderr[-2500:],
        }
        return d | ({"step": step} if step else {})

    far = 1000 + (1 << 28)  # a GiB past the end: out of the memory this process owns
    case("printf (child process)", lambda: isolated(printf_run()))
    case("printf (printed())", lambda: _printf_in_process())
    case("oob_write, 8 floats past the end, caching allocator", lambda: isolated(oob_into_a_neighbour()))
    case("oob_write far past the end", lambda: isolated(*oob_run("cuda", far)))
    case(
        "oob_write far past the end, CUDA_LAUNCH_BLOCKING=1",
        lambda: isolated(*oob_run("cuda", far, env={"CUDA_LAUNCH_BLOCKING": "1"})),
    )
    case("smem_race vs smem_reverse, plain runs", lambda: isolated(race_run()))
    rec["compute_sanitizer"] = tool("compute-sanitizer")
    if rec["compute_sanitizer"]:
        version = subprocess.run([rec["compute_sanitizer"], "--version"], capture_output=True, text=True).stdout
        rec["compute_sanitizer_version"] = version.strip().splitlines()[-1] if version.strip() else None
        for name, check, code, caching in (
            ("memcheck", "memcheck", MEMCHECK_PROGRAM, False),
            ("memcheck, caching allocator on", "memcheck", MEMCHECK_PROGRAM, True),
            ("racecheck", "racecheck", RACECHECK_PROGRAM, False),
        ):
            case(name, lambda c=check, k=code, a=caching: _sanitized(*sanitize(c, k, caching=a, timeout=240)))
    rec["expected_lines"] = {
        "oob_write": where(OOB_LINE),
        "race_write": where(RACE_WRITE_LINE),
        "race_read": where(RACE_READ_LINE),
    }
    case("ptxas -v (debug_lab.cu)", lambda: {"text": ptxas_report(arch=_arch())})
    case("cuobjdump --dump-resource-usage (debug_lab)", lambda: resource_usage(_built_so("debug_lab")))
    if (ROOT / "kernels" / "elu").is_dir():
        case("--use_fast_math on ELU", fast_math_effect)
        case(
            "ptx of elu.cu: default vs --use_fast_math",
            lambda: [
                {"build": build, **ptx_counts(ROOT / "kernels/elu/elu.cu", flags, arch=_arch())}
                for build, flags in (("default", ()), ("--use_fast_math", ("--use_fast_math",)))
            ],
        )
    if builds:
        from kit import build_ways as ways

        case("three ways to build (CUDA)", lambda: ways.measure(cuda=True))
    print(f"wrote {out / 'debug.json'} in {rec['seconds']} s")
    return rec


def _arch():
    major, minor = torch.cuda.get_device_capability(0)
    return f"sm_{major}{minor}"


def _built_so(op):
    return loader.build(op) / f"{loader.NAMESPACE}_{op}.so"


def _printf_in_process():
    from loader import ops

    with printed(echo=False) as out:
        ops.debug_lab("printf", torch.arange(6.0, device="cuda") / 2)
    return {"text": out.text}


def _sanitized(r, lines):
    return {
        "returncode": r.returncode,
        "lines": findings(lines)[:40],
        "all_lines": len(lines),
        "stderr_tail": r.stderr[-1500:],
    }


def show_recorded(case):
    """Print what the newest GPU recording says for one case, labelled with its machine and date; return it (or None
    where no recording ships, which it says)."""
    rec = results.recorded(RECORD)
    if rec is None:
        print(
            "No GPU recording ships with this copy of the kit yet (results/*/debug.json). On a GPU machine, "
            "`python -m kit.record_debug` makes one."
        )
        return None
    print(f"[recorded on {rec['gpu']}, {rec['date']}, torch {rec['torch']}: {rec['file']}]")
    value = rec["cases"].get(case)
    if value is None:
        print(f"  this recording has no case {case!r}")
    elif isinstance(value, dict) and "failed" in value:
        print(f"  the case failed when recorded: {value['failed']}")
    else:
        print(format_case(value))
    return value


def format_case(value):
    """A recorded case as text: sanitizer lines, printed text, a child's verdict, or a list of rows as a table."""
    if isinstance(value, list):
        if not value:
            return "  (no rows)"
        keys = list(value[0])
        widths = {k: max(len(str(k)), *(len(str(r.get(k))) for r in value)) for k in keys}
        lines = ["  ".join(str(k).ljust(widths[k]) for k in keys)]
        lines += ["  ".join(str(r.get(k)).ljust(widths[k]) for k in keys) for r in value]
        return "\n".join(lines)
    if "lines" in value:
        return "\n".join(value["lines"])
    if "text" in value:
        return value["text"].rstrip()
    if "verdict" in value:
        out = [f"verdict: {value['verdict']}"]
        if value.get("step"):
            out.append(f"last statement started: {STEPS.get(value['step'], value['step'])}")
        result = value.get("result") or {}
        if result.get("error"):
            out.append("error: " + result["error"].strip()[:700])
            if result.get("sticky") is not None:
                out.append(f"the GPU unusable by that process afterwards: {result['sticky']}")
        elif result:
            out.append(f"result: {result}")
        elif value["verdict"] != "ran to the end" and value.get("stderr_tail", "").strip():
            out.append("stderr, last lines:\n" + "\n".join(value["stderr_tail"].strip().splitlines()[-4:]))
        if value.get("stdout_tail", "").strip() and not result.get("error"):
            out.append("stdout:\n" + value["stdout_tail"].strip())
        return "\n".join(out)
    return json.dumps(value, indent=1)


if __name__ == "__main__":
    record(builds="--no-builds" not in sys.argv[1:])
