"""nvcc with a .cu file's device steps run beside its host steps: the same commands nvcc runs, in another order.

nvcc compiles a .cu file in two branches that meet at the end: the host branch (the host preprocessor, then
cudafe++, which splits off the host code) and the device branch (the device preprocessor, then cicc, ptxas and
fatbinary), then the host compiler compiles the host code with the device code embedded. nvcc 13 runs them one after
the other: its --threads runs the two preprocessors at once, and the device steps of several GPU targets at once, but
one target's cicc waits for cudafe++. It waits for one small file, the module id (a name for the file's internal
symbols, made from the source file's path), which cudafe++ writes and cicc reads; cicc makes the same id itself when
asked (--gen_module_id_file), so here each branch makes its own, and they run side by side.

Measured on add2.cu (2-core box without a GPU, 2026-12-04, nvcc 13.0, sm_90a, the loader's flags): host branch
~0.45 s (preprocessor 0.13-0.17, cudafe++ 0.32), device branch ~0.45 s (preprocessor 0.15, cicc 0.26, ptxas 0.04),
then the host compile 0.26 s. nvcc alone: 1.17 s in turn, 0.94 s side by side (medians of 11, interleaved; spread
1.08-1.50 and 0.79-1.16); with ccache around it 1.09 against 0.80 s. An edit of add2.cu through the loader, edit to
loaded library: 1.23 s against 0.96 s (medians of 9, interleaved; 1.14-1.53 and 0.86-1.10). It needs a second core
free: with another build running on the box the two came out even. The driver costs ~0.05 s of its own (Python's
start, the dry run) and adds no compile work: where every core is busy (a class editing at once) the gain shrinks
toward that cost (not measured yet: scripts/measure_class.py on the GPU machine).

How: `nvcc --dryrun` (13 ms) prints every command nvcc would run, with its environment; this runs them, each as soon
as the files it reads exist, the device preprocessor's output giving the dependency file (-MD -MF) as nvcc's does.
The commands and their flags are nvcc's own, so the objects are the same: add2's and matmul's libraries built both
ways had byte-identical .nv_fatbin sections (every cubin), .cuda.o files that differ only in nvcc's temporary file
name, and the same dependency lists; compile errors and warnings print as nvcc prints them, and a failed compile
exits non-zero. Where anything differs from what this expects (another kind of step, more than one object, -E, --keep ...), or the
two module ids differ, it runs plain nvcc instead.

The loader builds through a small `nvcc` script (wrapper(), building/compiler_cache.py: behind ccache where there is
a cache); LABKIT_PARALLEL_NVCC=0 makes it run plain nvcc.
Run as: python parallel_nvcc.py /path/to/real/nvcc <nvcc arguments>
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# The steps that may run beside others, found by their program. Any other step (rm, fatbinary, the host compile,
# nvlink ...) waits for every step before it, and every step after it waits for it.
_FREE = {"gcc -E", "cudafe++", "cicc", "ptxas"}
# Flags that write a file, per program; every other path of our temporary folder named in a step is read by it
_WRITES = {
    "gcc -E": ("-o",),
    "cudafe++": ("--gen_c_file_name", "--module_id_file_name"),
    "cicc": ("-o", "--gen_c_file_name", "--gen_device_file_name", "--stub_file_name", "--module_id_file_name"),
    "ptxas": ("-o",),
}
# nvcc arguments this never handles itself: anything but a plain compile of one file to one object
_PLAIN_ONLY = re.compile(
    r"^(-E|--preprocess|-M|-MM|--generate-(nonsystem-)?dependencies|-keep|--keep|-keep-dir|--keep-dir|-save-temps|"
    r"--save-temps|-dryrun|--dryrun|-v|--verbose|-ptx|--ptx|-cubin|--cubin|-fatbin|--fatbin|-cuda|--cuda|"
    r"-dlink|--device-link|-link|--link|-lib|--lib|-run|--run|-dc|--device-c|-dw|--device-w|-rdc.*|"
    r"--relocatable-device-code.*|-optf|--options-file|-objtemp|--objdir-as-tempdir)(=.*)?$"
)


def _program(words):
    name = Path(words[0]).name
    if name == "gcc" or name.endswith(("g++", "c++", "clang", "clang++")):
        return "gcc -E" if "-E" in words else "host compile"
    return name


class _Step:
    def __init__(self, index, line):
        self.index, self.line = index, line
        # nvcc sends each step's output to files it prints after; here it is captured instead
        self.command = re.sub(r"\s*>\s*\S+_stdout\s+2>\s*\S+_stderr\s*$", "", line)
        self.words = shlex.split(self.command)
        self.program = _program(self.words)
        if self.program == "rm":  # nvcc removes a file that need not exist
            self.command = shlex.join(["rm", "-f", *self.words[1:]])
        self.writes = set()
        for flag in _WRITES.get(self.program, ()):
            for i, w in enumerate(self.words[:-1]):
                if w == flag and (flag != "--module_id_file_name" or "--gen_module_id_file" in self.words):
                    self.writes.add(self.words[i + 1])
        self.after = set()
        self.result = None  # CompletedProcess once run


def _plan(dryrun, tmp, output):
    """(environment lines, steps, dependency-file step index, dependency file) from `nvcc --dryrun`'s listing, or
    None where it is not the compile this knows how to run."""
    env, steps, depfile = [], [], None
    for raw in dryrun.splitlines():
        if not raw.startswith("#$ "):
            continue
        line = raw[3:].strip()
        if re.match(r"^\w+=", line):
            env.append(line)
        elif line.startswith("-- Filter Dependencies -- >"):
            depfile = (len(steps), line.split(">", 1)[1].strip())
        elif line:
            steps.append(_Step(len(steps), line))
    if not steps or any(s.program not in _FREE | {"rm", "fatbinary", "host compile"} for s in steps):
        return None
    if [s.program for s in steps].count("host compile") != 1 or steps[-1].program != "host compile":
        return None
    if not all(str(tmp) in w for s in steps for w in s.writes):
        return None  # a step would write outside our own temporary folder
    # each cicc makes its module id itself instead of reading cudafe++'s (compared after both ran)
    ids = []
    for s in steps:
        if s.program == "cicc" and "--gen_module_id_file" not in s.words:
            i = s.words.index("--module_id_file_name") if "--module_id_file_name" in s.words else None
            if i is None:
                return None
            theirs, own = s.words[i + 1], str(tmp / f"cicc{s.index}.module_id")
            flag = f"--module_id_file_name {shlex.quote(theirs)}"
            if s.command.count(f'--module_id_file_name "{theirs}"') == 1:
                flag = f'--module_id_file_name "{theirs}"'
            if s.command.count(flag) != 1:
                return None
            s.command = s.command.replace(flag, f'--gen_module_id_file --module_id_file_name "{own}"')
            s.words[i : i + 2] = ["--gen_module_id_file", "--module_id_file_name", own]
            s.writes.add(own)
            ids.append((theirs, own))
    written = {}
    for s in steps:
        if s.program in _FREE:
            s.after = {written[p] for p in written if any(p in w for w in s.words) and written[p] != s.index}
        else:
            s.after = set(range(s.index))
        for later in steps[s.index + 1 :]:
            if s.program not in _FREE:
                later.after.add(s.index)
        for p in s.writes:
            written[p] = s.index
    if depfile is not None:
        first_pp = next((s for s in steps if s.program == "gcc -E"), None)
        if first_pp is None or not first_pp.writes:
            return None
        depfile = (first_pp, depfile[1])
    return env, steps, depfile, ids


def _dependencies(ii, target):
    """The dependency file nvcc writes for -MD: every file the preprocessed source came from, in first-seen order."""
    seen = {}
    with open(ii, errors="replace") as f:
        for line in f:
            if line.startswith("# "):
                m = re.match(r'# \d+ "([^"]+)"', line)
                if m and not m.group(1).startswith("<"):
                    seen.setdefault(m.group(1), None)
    names = [n.replace(" ", "\\ ") for n in seen]
    return f"{target} : " + " \\\n    ".join(names) + "\n"


def _run_steps(env_lines, steps, tmp):
    """Run each step once the steps it waits for succeeded; stop starting new ones after a failure. Their TMPDIR is
    tmp, the driver's own folder: a step that fails beside another (cicc on a device-side error, where plain nvcc
    would have stopped at cudafe++) leaves its temporary files there, and the driver removes the folder."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    for line in env_lines:  # NAME=value as a shell would read it: nvcc sets these for its steps
        name, _, value = line.partition("=")
        env[name] = " ".join(shlex.split(value))
    done = threading.Condition()
    started = set()

    def run(step):
        step.start = time.perf_counter()
        step.result = subprocess.run(["/bin/sh", "-c", step.command], env=env, capture_output=True)
        step.end = time.perf_counter()
        with done:
            done.notify_all()

    with done:
        while True:
            failed = any(s.result is not None and s.result.returncode for s in steps)
            finished = {s.index for s in steps if s.result is not None}
            if not failed:
                for s in steps:
                    if s.index not in started and s.after <= finished:
                        started.add(s.index)
                        threading.Thread(target=run, args=(s,), daemon=True).start()
            if started <= finished and (failed or len(finished) == len(steps)):
                return
            done.wait()


def _without_time(args):
    """nvcc's arguments without --time <file> (-time, --time=), and that file or None."""
    rest, times, i = [], None, 0
    while i < len(args):
        a = args[i]
        if a in ("-time", "--time") and i + 1 < len(args):
            times, i = args[i + 1], i + 2
            continue
        if a.startswith(("-time=", "--time=")):
            times = a.split("=", 1)[1]
        else:
            rest.append(a)
        i += 1
    return rest, times


def _write_times(path, steps, source):
    """Each step's time as nvcc --time writes it (a CSV row per step, milliseconds), under nvcc's phase names."""
    names = {"cudafe++": "cudafe++", "cicc": "cicc", "ptxas": "ptxas", "fatbinary": "fatbinary"}
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as f:
        if new:
            f.write(
                "source file name , phase name , phase input files , phase output file , arch , tool, metric , unit\n"
            )
        for s in steps:
            if s.program == "gcc -E":
                name = (
                    "gcc (preprocessing 1)"
                    if any(w.startswith("-D__CUDA_ARCH__=") for w in s.words)
                    else "gcc (preprocessing 4)"
                )
            elif s.program == "host compile":
                name = "gcc (compiling)"
            elif s.program in names:
                name = names[s.program]
            else:
                continue
            f.write(f"{source} , {name} , , , , labkit parallel_nvcc , {(s.end - s.start) * 1e3:.4f} , ms\n")


def _report(steps):
    """nvcc's output: each step's that ran, in nvcc's order, up to the first that failed; returns that step's status
    (nvcc's is 1, 2 or 255 by case: non-zero is what counts), or 0. A step that never started is passed over: one
    beside it failed first (the device preprocessor or cicc, on an error in the file, before the host preprocessor
    had given cudafe++ its input). Plain nvcc prints the same error: cudafe++ and cicc parse the file with the same
    front end and word its errors alike, and an error on the device side alone is the device steps' in either order."""
    for s in steps:
        if s.result is None:
            continue
        sys.stdout.buffer.write(s.result.stdout)
        sys.stderr.buffer.write(s.result.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        if s.result.returncode:
            return s.result.returncode
    return 0


def _plain(nvcc, args):
    os.execv(nvcc, [nvcc, *args])


def main(argv):
    nvcc, args = argv[1], argv[2:]
    if (
        os.environ.get("LABKIT_PARALLEL_NVCC") == "0"
        or any(_PLAIN_ONLY.match(a) for a in args)
        or sum(a.endswith((".cu", ".cpp", ".cc", ".c")) for a in args) != 1
        or "-o" not in args
    ):
        _plain(nvcc, args)
    output = args[args.index("-o") + 1]
    args, times = _without_time(args)
    tmp = Path(tempfile.mkdtemp(prefix="labkit-nvcc-"))
    try:
        dry = subprocess.run(
            [nvcc, "--dryrun", *args], capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp)}
        )
        plan = _plan(dry.stderr, tmp, output) if dry.returncode == 0 else None
        if plan is None:
            _plain(nvcc, args)
        env_lines, steps, depfile, ids = plan
        _run_steps(env_lines, steps, tmp)
        status = _report(steps)
        if status:
            return status
        if any(Path(theirs).read_bytes() != Path(own).read_bytes() for theirs, own in ids):
            _plain(nvcc, args)  # cicc named the file's internal symbols otherwise than cudafe++: nvcc's own order
        if times:
            _write_times(times, steps, next(a for a in args if a.endswith((".cu", ".cpp", ".cc", ".c"))))
        if depfile is not None:
            pp, dfile = depfile
            Path(dfile).write_text(_dependencies(next(iter(pp.writes)), output))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def wrapper(folder, nvcc):
    """An executable `nvcc` in `folder` that runs this with the real `nvcc`, and the environment variables it needs,
    as (path, {name: value}). Its name stays nvcc, which ccache goes by. Its text names neither this file nor the
    Python, which come from the environment: ccache hashes a compiler's content (CCACHE_COMPILERCHECK=content), and
    every student's copy of the kit must give the same keys to share a class's cache; the real nvcc's size and time
    are in it instead, so that a CUDA installed anew gives new keys. Without those variables (ninja run by hand in a
    build folder) it is plain nvcc."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "nvcc"
    st = os.stat(nvcc)
    real = shlex.quote(nvcc)
    text = (
        f"#!/bin/sh\n# nvcc, its device steps beside its host steps (the kit's building/parallel_nvcc.py)\n"
        f"# {real}: {st.st_size} bytes, modified {st.st_mtime_ns}\n"
        f'[ -n "$LABKIT_NVCC_DRIVER" ] || exec {real} "$@"\n'
        f'exec "$LABKIT_NVCC_PYTHON" -I -S "$LABKIT_NVCC_DRIVER" {real} "$@"\n'
    )
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(path)
    return str(path), {"LABKIT_NVCC_DRIVER": os.path.abspath(__file__), "LABKIT_NVCC_PYTHON": sys.executable}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
