"""Debugging kernels, for 05_debugging.ipynb and its tests: printf output in the notebook's own cell, the broken
kernels of kernels/debug_lab/ run in child processes (the asynchronous error, CUDA_LAUNCH_BLOCKING, compute-sanitizer,
AddressSanitizer on the CPU), register and spill counts, what --use_fast_math does to ELU, and the GPU machine's
recording of all of it (`python -m kit.record_debug`), which the notebook shows on machines without a GPU.
"""
import contextlib
import ctypes
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import loader
from kit import results
from kit.devices import run_isolated

ROOT = loader.ROOT
DEBUG_CU = ROOT / "kernels" / "debug_lab" / "debug_lab.cu"
DEBUG_CPU = ROOT / "kernels" / "debug_lab" / "debug_lab_cpu.cpp"

# -- printf ---------------------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None)  # the process's C library: its fflush, for C's stdout buffer


class Printed:
    """What a printed() block wrote to file descriptor 1 (its .text, once the block is over)."""
    text = ""


@contextlib.contextmanager
def printed(echo=True):
    """Catch what C, C++ and CUDA code print to file descriptor 1 inside the block, and print it here, with Python.

    printf (the CPU's, and the GPU's, which the CUDA runtime prints on its behalf) writes to file descriptor 1 of the
    process, below Python. A notebook cell shows what Python's sys.stdout receives; fd 1 reaches it late, in another
    cell, or only in the terminal that started Jupyter. So for the block, fd 1 points at a temporary file; at its end
    every GPU is synchronised (the GPU's printf buffer is printed at a synchronising call, not at the printf), C's
    stdout buffer is flushed (it is block-buffered when fd 1 is a file), fd 1 is put back, and the text is printed
    with Python's print: into this cell, in order. echo=False only keeps it in .text."""
    out = Printed()
    sys.stdout.flush()
    _libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield out
        finally:
            try:
                if torch.cuda.is_initialized():
                    for d in range(torch.cuda.device_count()):
                        torch.cuda.synchronize(d)
            finally:  # even if the GPU reports an error at the synchronisation: fd 1 must come back
                _libc.fflush(None)
                os.dup2(saved, 1)
                os.close(saved)
                tmp.seek(0)
                out.text = tmp.read().decode(errors="replace")
                if echo:
                    print(out.text, end="", flush=True)


# -- tools ----------------------------------------------------------------------------------------------------------

def tool(name):
    """The path of a CUDA tool (compute-sanitizer, cuobjdump, nvdisasm, nvcc), or None.

    Looks on PATH, then in the CUDA toolkit (compute-sanitizer has a folder of its own there), then, for cuobjdump
    and nvdisasm, in the copy Triton ships (pip's torch brings Triton: these work without a toolkit and without a GPU)."""
    found = shutil.which(name)
    if found:
        return found
    homes = [loader.cpp_extension().CUDA_HOME, os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for home in dict.fromkeys(h for h in homes if h):
        for sub in ("bin", "compute-sanitizer"):
            path = Path(home) / sub / name
            if path.is_file():
                return str(path)
    spec = importlib.util.find_spec("triton")
    if spec and spec.submodule_search_locations:
        path = Path(spec.submodule_search_locations[0]) / "backends" / "nvidia" / "bin" / name
        if path.is_file():
            return str(path)
    return None


def line_of(path, text):
    """The line number (from 1) of the first line of `path` containing `text`: where a report should point."""
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if text in line:
            return i
    raise ValueError(f"{text!r} not found in {path}")


# The lines the tools must name (found by content, so edits to the files move them along)
OOB_LINE = ("y[i] = float(i);", DEBUG_CU)
RACE_WRITE_LINE = ("// the write", DEBUG_CU)
RACE_READ_LINE = ("// the read:", DEBUG_CU)
CPU_OOB_LINE = ("y[i] = float(i);", DEBUG_CPU)


def where(mark):
    """'debug_lab.cu:41' for one of the marks above."""
    text, path = mark
    return f"{path.name}:{line_of(path, text)}"


# -- the broken kernels, in child processes -------------------------------------------------------------------------

# Each step prints its name first, so that the child's output says which statement was running when it failed,
# even when it dies of a signal. The third statement is the first that waits for the device.
STEPS = {
    "launch": "ops.debug_lab('oob_write', y, count=...)",
    "next call": "z = torch.ones(8, device=...) * 2",
    "wait": "z.sum().item()",
    "done": "(all three ran)",
}

_OOB_CHILD = """
import torch
from loader import ops
y = torch.zeros({n}, device="{device}")
def step(name):
    print("step:", name, flush=True)
try:
    step("launch")
    ops.debug_lab("oob_write", y, count={count})
    step("next call")
    z = torch.ones(8, device="{device}") * 2
    step("wait")
    z.sum().item()
    step("done")
except Exception as e:  # torch.AcceleratorError for a CUDA error (a RuntimeError)
    print("error:", str(e).splitlines()[0], flush=True)
    sticky = None
    if "{device}" == "cuda":  # is the GPU still usable by this process?
        try:
            (torch.zeros(1, device="cuda") + 1).item()
            sticky = False
        except Exception:
            sticky = True
    report({{"error": str(e), "type": type(e).__name__, "sticky": sticky}})
else:
    report({{"error": None, "head": y[:4].tolist()}})
"""


def oob_run(device, count, n=1000, env=None, wrapper=(), timeout=300):
    """ops.debug_lab("oob_write", y, count) on a y of n floats, then a later call and a wait, in a child process.

    Returns (Isolated, step) where step is the statement that was running when it failed or crashed ("done" if none).
    """
    code = _OOB_CHILD.format(n=n, count=count, device=device)
    r = run_isolated(code, env=env, wrapper=wrapper, timeout=timeout)
    steps = [ln.split(":", 1)[1].strip() for ln in r.stdout.splitlines() if ln.startswith("step:")]
    return r, (steps[-1] if steps else None)


_NEIGHBOUR_CHILD = """
import torch
from loader import ops
y = torch.zeros(1000, device="cuda")
z = torch.zeros(1000, device="cuda")  # most likely right after y, in the same block of memory the allocator holds
gap = (z.data_ptr() - y.data_ptr()) // 4  # floats from the start of y to the start of z
count = gap + 8 if gap > 0 else 1008
ops.debug_lab("oob_write", y, count=count)
torch.cuda.synchronize()
report({"gap": gap, "count": count, "y_right": bool(torch.equal(y, torch.arange(1000.0, device="cuda"))),
        "z_head": z[:10].tolist()})
"""


def oob_into_a_neighbour():
    """A few floats past the end of y, with PyTorch's caching allocator: no error, and the tensor after y changes."""
    return run_isolated(_NEIGHBOUR_CHILD)


_RACE_CHILD = """
import torch
from loader import ops
x = torch.randn(256 * 4096, device="cuda")
expected = x.view(-1, 256).flip(1).reshape(-1)
wrong = [int((ops.debug_lab("smem_race", x) != expected).sum()) for _ in range(20)]
right = [int((ops.debug_lab("smem_reverse", x) != expected).sum()) for _ in range(20)]
report({"n": x.numel(), "race_wrong": wrong, "reverse_wrong": right})
"""


def race_run():
    """The racy and the right block reversal, 20 times each on 2^20 floats: how many elements each got wrong."""
    return run_isolated(_RACE_CHILD)


_PRINTF_CHILD = """
import torch
from loader import ops
ops.debug_lab("printf", torch.arange(6.0, device="cuda") / 2)
torch.cuda.synchronize()
"""


def printf_run():
    """printf_kernel in a child process, whose stdout comes back as text: the other way to see device printf."""
    return run_isolated(_PRINTF_CHILD)


# -- compute-sanitizer ----------------------------------------------------------------------------------------------

MEMCHECK_CHILD = """
import torch
from loader import ops
y = torch.zeros(1000, device="cuda")
ops.debug_lab("oob_write", y, count=1003)  # three floats past the end
torch.cuda.synchronize()
"""

RACECHECK_CHILD = """
import torch
from loader import ops
x = torch.arange(256 * 8, dtype=torch.float32, device="cuda")
ops.debug_lab("smem_reverse", x)  # the right kernel first: racecheck must say nothing about it
ops.debug_lab("smem_race", x)
torch.cuda.synchronize()
"""


def sanitize(check, code, caching=False, timeout=600):
    """Run Python `code` in a child under `compute-sanitizer --tool <check>`; returns (Isolated, its report lines).

    caching=False sets PYTORCH_NO_CUDA_MEMORY_CACHING=1: PyTorch then asks CUDA for each tensor's memory, instead of
    cutting tensors from big blocks it keeps. memcheck knows only what CUDA handed out, so with caching on, a write
    just past a tensor lands inside one of those blocks and looks fine to it."""
    exe = tool("compute-sanitizer")
    if exe is None:
        raise FileNotFoundError("compute-sanitizer not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    wrapper = [exe, "--tool", check, "--show-backtrace", "no"] + (["--print-limit", "10"] if check == "memcheck" else [])
    env = {} if caching else {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    r = run_isolated(code, env=env, wrapper=wrapper, timeout=timeout)
    lines = [ln for ln in (r.stdout + "\n" + r.stderr).splitlines() if ln.startswith("=========")]
    return r, lines


def findings(lines):
    """A sanitizer report without its "Program hit cudaError..." notes: CUDA calls PyTorch makes, and expects to
    fail, while it starts (the checks report those too, and they are not our kernel's)."""
    out, skipping = [], False
    for line in lines:
        body = line[len("========="):]
        if "Program hit" in body:
            skipping = True
            continue
        if skipping and body.startswith("     "):  # the note's indented continuation lines
            continue
        skipping = False
        if body.strip():
            out.append(line)
    return out


# -- AddressSanitizer: the CPU's memory checker ----------------------------------------------------------------------

def asan_runtime():
    """The AddressSanitizer runtime of the C++ compiler the loader uses (libasan.so), or None."""
    from building.toolchain import safe_cxx

    cxx = safe_cxx()[0] or os.environ.get("CXX") or "c++"
    try:
        path = subprocess.run([*cxx.split(), "-print-file-name=libasan.so"], capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except OSError:
        return None
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


_ASAN_CHILD = """
import torch
from loader import Ops
lab = Ops({kernels!r}, build_dir={build!r})
y = torch.zeros({n})
lab.debug_lab("oob_write", y, count={count})
print("not caught", flush=True)
"""


def asan_oob(n=1000, count=1001):
    """The CPU out-of-bounds write under AddressSanitizer, in a child: a scratch copy of debug_lab whose op.py adds
    CXX_FLAGS = ["-g", "-fsanitize=address"], run with the ASan runtime preloaded (Python itself is not built with
    ASan, so its runtime must be loaded first). Returns the Isolated; asan_report() picks out the lines that matter."""
    from kit.notebook import scratch_kit

    lib = asan_runtime()
    if lib is None:
        raise FileNotFoundError("no AddressSanitizer runtime (libasan.so) for this C++ compiler")
    _, kernels = scratch_kit("debug_lab")
    with open(kernels / "debug_lab" / "op.py", "a") as f:
        f.write('\nCXX_FLAGS = ["-g", "-fsanitize=address"]  # added by kit.debugging.asan_oob\n')
    code = _ASAN_CHILD.format(kernels=str(kernels), build=str(kernels.parent / "build"), n=n, count=count)
    try:
        # detect_leaks=0: Python keeps memory until exit on purpose, which LeakSanitizer would report at length.
        # A CPU build, and no GPU for the child: the CUDA driver, once started, reserves address ranges that can
        # collide with the ones AddressSanitizer claims, and this lesson is about the CPU anyway.
        env = {"LD_PRELOAD": lib, "ASAN_OPTIONS": "detect_leaks=0", "LABKIT_CUDA": "0", "CUDA_VISIBLE_DEVICES": ""}
        return run_isolated(code, env=env, timeout=900)
    finally:
        shutil.rmtree(kernels.parent, ignore_errors=True)  # the scratch copy and its build: used by the child only


def asan_report(text):
    """The lines of an AddressSanitizer report that say what, where and whose memory."""
    keep = []
    for line in text.splitlines():
        s = line.strip()
        if "ERROR: AddressSanitizer" in s or s.startswith(("WRITE of", "READ of", "allocated by")) or " is located " in s:
            keep.append(s)
        elif re.match(r"#[01] ", s) and keep:  # the two innermost frames of each stack: where, and who called it
            keep.append("  " + re.sub(r"0x[0-9a-f]+ in ", "", s))
        elif s.startswith("SUMMARY:"):
            keep.append(s)
            break
    return keep


# -- registers, spills, shared memory -------------------------------------------------------------------------------

def ptxas_report(cu=DEBUG_CU, arch="sm_90", flags=()):
    """nvcc -Xptxas -v on one torch-free .cu file: ptxas's own lines on registers, spills, shared memory, barriers.

    A kernel file of the kit includes no torch header, so nvcc compiles it alone in about a second."""
    nvcc = tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-c", f"-arch={arch}", "-O3", "-DLABKIT_WITH_CUDA", "-Xptxas", "-v", *flags,
               "-I", str(ROOT / "kernels" / "common"), str(cu), "-o", str(Path(tmp) / "k.o")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"nvcc failed:\n{r.stderr[-2000:]}")
    return _demangle(r.stderr)


def _demangle(text):
    if not shutil.which("c++filt"):
        return text
    return subprocess.run(["c++filt"], input=text, capture_output=True, text=True).stdout or text


def _declared_shared(shared, arch):
    """The static shared memory a kernel declares, from cuobjdump's SHARED. For sm_90 code SHARED also holds the 1 KB
    the driver reserves per block, wherever a kernel uses shared memory at all: one __shared__ float[256] reads 2048
    there and 1024 for sm_80, while ptxas -v says 1024 for both. theoretical_occupancy adds the reserve itself."""
    m = re.match(r"sm_(\d+)", arch or "")
    return shared - 1024 if shared >= 1024 and m and int(m.group(1)) >= 90 else shared


def resource_usage(so):
    """Per kernel of a built library: registers, stack, shared (what the kernel declares) and local (spilled) memory,
    read by cuobjdump.

    Works on any machine with cuobjdump (no GPU needed): it reads the machine code stored in the .so."""
    exe = tool("cuobjdump")
    if exe is None:
        raise FileNotFoundError("cuobjdump not found (CUDA toolkit, or Triton's copy)")
    out = subprocess.run([exe, "--dump-resource-usage", str(so)], capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise RuntimeError(out.stderr)
    rows, arch = [], None
    lines = out.stdout.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"arch = (\S+)", line.strip())
        if m:
            arch = m.group(1)
        m = re.match(r"\s*Function (\S+):", line)
        if m and i + 1 < len(lines):
            fields = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", lines[i + 1]))
            kernel = re.sub(r"^void ", "", _demangle(m.group(1)).strip())  # templates demangle with their return type
            rows.append({"kernel": kernel, "arch": arch, "registers": int(fields["REG"]),
                         "stack": int(fields["STACK"]), "shared": _declared_shared(int(fields["SHARED"]), arch),
                         "local": int(fields["LOCAL"])})
    return rows


# Per SM, by compute capability: the most resident blocks (CUDA C Programming Guide, "Compute Capabilities"); every
# GPU since Maxwell has 65536 registers per SM, allocated to a warp in units of 256, and shared memory is
# allocated in units of 128 bytes, with 1 KB per block reserved for the system from sm_80 on.
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16, (8, 9): 24, (9, 0): 32}
REGISTERS_PER_SM, REGISTER_UNIT, SHARED_UNIT = 65536, 256, 128


def theoretical_occupancy(registers, shared, threads, props):
    """How many blocks of a kernel fit on one SM at once, and what share of the SM's warp slots they fill: the
    CUDA Occupancy Calculator's arithmetic from a kernel's registers per thread and static shared memory per block
    (resource_usage) and its threads per block. props: torch.cuda.get_device_properties (or any object with
    major, minor, max_threads_per_multi_processor, shared_memory_per_multiprocessor, warp_size).
    Returns {"blocks_per_sm", "occupancy", "limited_by"}: occupancy is resident warps / the SM's most warps."""
    warp = props.warp_size
    warps = -(-threads // warp)
    max_warps = props.max_threads_per_multi_processor // warp
    per_warp = -(-registers * warp // REGISTER_UNIT) * REGISTER_UNIT
    reserved = 1024 if props.major >= 8 else 0
    per_block = -(-(shared + reserved) // SHARED_UNIT) * SHARED_UNIT
    limits = {"threads": max_warps // warps,
              "registers": (REGISTERS_PER_SM // max(per_warp, REGISTER_UNIT)) // warps,
              "shared memory": props.shared_memory_per_multiprocessor // per_block,
              "blocks per SM": MAX_BLOCKS_PER_SM.get((props.major, props.minor), 16)}
    blocks = min(limits.values())
    return {"blocks_per_sm": blocks, "occupancy": blocks * warps / max_warps,
            "limited_by": [k for k, v in limits.items() if v == blocks]}


def cuda_build_of(op, timeout=900):
    """Build an op for CUDA in a child process and return its library's path; with no GPU here, for sm_90 (H100/H200),
    as a compile check (LABKIT_CUDA=1). Raises with the build's output if it fails."""
    env = {"LABKIT_CUDA": "1"}
    if not torch.cuda.is_available() and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
        env["TORCH_CUDA_ARCH_LIST"] = "9.0"
    r = run_isolated(f"import loader; report(str(loader.build({op!r}, cuda=True)))", env=env, timeout=timeout)
    if r.result is None:
        raise RuntimeError(f"CUDA build of {op} failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return Path(r.result) / f"{loader.NAMESPACE}_{op}.so"


def can_compile_cuda():
    """None if this machine can compile .cu files for a CUDA build of torch, else why not."""
    if not torch.version.cuda:
        return "torch is a CPU-only build"
    if tool("nvcc") is None or not loader.cpp_extension().CUDA_HOME:
        return "no CUDA toolkit (nvcc)"
    return None


# -- --use_fast_math and ELU (GPU) ----------------------------------------------------------------------------------

def ulps_apart(a, b):
    """How many float32 values lie between a and b, elementwise (0: the same bits, or +0 and -0)."""
    def ordered(t):
        i = t.contiguous().view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)
    return (ordered(a) - ordered(b)).abs()


def compare(x, y, ref):
    """How far y is from ref (float32): elements that differ, the largest error in ulps and absolutely, and where."""
    both_nan = torch.isnan(y) & torch.isnan(ref)
    ulps = torch.where(both_nan, 0, ulps_apart(y, ref))
    worst = int(ulps.argmax())
    return {"differ": int(((y != ref) & ~both_nan).sum()), "of": y.numel(), "max_ulps": int(ulps.max()),
            "max_abs": float(torch.where(both_nan, 0, (y.double() - ref.double()).abs()).max()),
            "worst_x": float(x[worst]), "worst_y": float(y[worst]), "worst_ref": float(ref[worst])}


def elu_inputs(device):
    """Where ELU's arithmetic is hard: across [-20, 20], the tiny negatives where e^x - 1 cancels, and subnormals."""
    return torch.cat([torch.linspace(-20, 20, 1 << 20, device=device),
                      -torch.logspace(-45, 0, 8192, device=device),
                      torch.tensor([-1e-40, -1e-39, -1e-38, 1e-40], device=device)])


def fast_math_effect(isolated=True):
    """ELU built twice, by default and with --use_fast_math (on a scratch copy: CUDA_FLAGS in its op.py), each
    measured against PyTorch's own F.elu and elu_backward on the same inputs. GPU only. Returns a list of rows.

    isolated: in a child process. The second build takes over the registered labkit::elu* kernels for a while; a
    notebook's own process should not have to live through that (on the H200 it once did not: the kernel died)."""
    if isolated:
        r = run_isolated("from kit.debugging import fast_math_effect\nreport(fast_math_effect(isolated=False))",
                         timeout=900)
        if r.result is None:
            raise RuntimeError(f"fast_math_effect failed in its child process (exit code {r.returncode}):\n"
                               f"{(r.stdout + r.stderr)[-3000:]}")
        return r.result
    import torch.nn.functional as F

    from kit.notebook import scratch_kit
    from loader import ops

    lab, kernels = scratch_kit("elu")
    with open(kernels / "elu" / "op.py", "a") as f:
        f.write('\nCUDA_FLAGS = ["--use_fast_math"]  # added by kit.debugging.fast_math_effect\n')
    x = elu_inputs("cuda")
    g = torch.randn(x.numel(), device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    ref, ref_grad = F.elu(x), torch.ops.aten.elu_backward(g, 1.0, 1, 1, False, x)
    rows = []
    try:
        for build, elu in (("default", ops.elu), ("--use_fast_math", lab.elu)):
            y = elu(x)  # also makes this build's library the one that runs labkit::elu*
            grad = torch.ops.labkit.elu_backward(g, x, 1.0)
            seed = elu(x, version="seed")
            for kernel, out, reference in (("ops.elu forward (expm1f)", y, ref),
                                           ("elu_backward (expf)", grad, ref_grad),
                                           ("seed kernel (expf(x) - 1)", seed, ref)):
                rows.append({"build": build, "kernel": kernel, **compare(x, out, reference)})
    finally:
        ops.elu(x)  # the real kit's build runs labkit::elu* again, whatever happened
    return rows


def ptx_counts(cu, flags=(), arch="sm_90"):
    """Count a few telling instructions in the PTX nvcc makes of a torch-free .cu file: no GPU needed.

    ex2.approx is the hardware's 2^x (every exp is built on it; the accurate ones add corrections around it); .ftz
    means subnormal inputs and results are flushed to zero."""
    nvcc = tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    cmd = [nvcc, "-ptx", f"-arch={arch}", "-O3", "-DLABKIT_WITH_CUDA", *flags, "-I", str(ROOT / "kernels" / "common"),
           str(cu), "-o", "-"]
    ptx = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    instructions = [ln.split()[0] for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith(("//", "."))
                    and ln.startswith("\t")]
    return {"instructions": len(instructions),
            "ex2.approx": sum(i.startswith("ex2.approx") for i in instructions),
            ".ftz (flush subnormals)": sum(".ftz" in i for i in instructions)}


# -- the GPU machine's recording ------------------------------------------------------------------------------------

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
    rec = {"date": datetime.date.today().isoformat(), "gpu": gpu, "torch": torch.__version__,
           "python": platform.python_version(), "cases": {}}
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
        d = {"verdict": r.verdict, "returncode": r.returncode, "result": r.result,
             "stdout_tail": r.stdout[-1500:], "stderr_tail": r.stderr[-2500:]}
        return d | ({"step": step} if step else {})

    far = 1000 + (1 << 28)  # a GiB past the end: out of the memory this process owns
    case("printf (child process)", lambda: isolated(printf_run()))
    case("printf (printed())", lambda: _printf_in_process())
    case("oob_write, 8 floats past the end, caching allocator", lambda: isolated(oob_into_a_neighbour()))
    case("oob_write far past the end", lambda: isolated(*oob_run("cuda", far)))
    case("oob_write far past the end, CUDA_LAUNCH_BLOCKING=1",
         lambda: isolated(*oob_run("cuda", far, env={"CUDA_LAUNCH_BLOCKING": "1"})))
    case("smem_race vs smem_reverse, plain runs", lambda: isolated(race_run()))
    rec["compute_sanitizer"] = tool("compute-sanitizer")
    if rec["compute_sanitizer"]:
        version = subprocess.run([rec["compute_sanitizer"], "--version"], capture_output=True, text=True).stdout
        rec["compute_sanitizer_version"] = version.strip().splitlines()[-1] if version.strip() else None
        for name, check, code, caching in (("memcheck", "memcheck", MEMCHECK_CHILD, False),
                                           ("memcheck, caching allocator on", "memcheck", MEMCHECK_CHILD, True),
                                           ("racecheck", "racecheck", RACECHECK_CHILD, False)):
            case(name, lambda c=check, k=code, a=caching: _sanitized(*sanitize(c, k, caching=a, timeout=240)))
    rec["expected_lines"] = {"oob_write": where(OOB_LINE), "race_write": where(RACE_WRITE_LINE),
                             "race_read": where(RACE_READ_LINE)}
    case("ptxas -v (debug_lab.cu)", lambda: {"text": ptxas_report(arch=_arch())})
    case("cuobjdump --dump-resource-usage (debug_lab)", lambda: resource_usage(_built_so("debug_lab")))
    if (ROOT / "kernels" / "elu").is_dir():
        case("--use_fast_math on ELU", fast_math_effect)
        case("ptx of elu.cu: default vs --use_fast_math",
             lambda: [{"build": build, **ptx_counts(ROOT / "kernels/elu/elu.cu", flags, arch=_arch())}
                      for build, flags in (("default", ()), ("--use_fast_math", ("--use_fast_math",)))])
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
    return {"returncode": r.returncode, "lines": findings(lines)[:40], "all_lines": len(lines),
            "stderr_tail": r.stderr[-1500:]}


def show_recorded(case):
    """Print what the newest GPU recording says for one case, labelled with its machine and date; return it (or None
    where no recording ships, which it says)."""
    rec = recorded()
    if rec is None:
        print("No GPU recording ships with this copy of the kit yet (results/*/debug.json). On a GPU machine, "
              "`python -m kit.record_debug` makes one.")
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


def recorded():
    """The newest recording shipped in results/ (a dict with 'file'), or None."""
    data, path = results.newest("debug.json")
    return None if data is None else data | {"file": str(results.shown(path))}
