"""What a compiled kernel uses, read from the build without running it: the CUDA tools that tell (nvcc, ptxas,
cuobjdump; Triton's copies work without a toolkit), registers, spills and shared memory per kernel, the PTX
instructions of a file, and the occupancy those resources allow on a GPU. For notebooks 05 and 07, `make bench`'s
matmul and the tests; no GPU needed, except to build for the one present.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

import loader
from kit.devices import run_isolated

ROOT = loader.ROOT
DEBUG_CU = ROOT / "kernels" / "debug_lab" / "debug_lab.cu"


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


def ptxas_report(cu=DEBUG_CU, arch="sm_90", flags=()):
    """nvcc -Xptxas -v on one torch-free .cu file: ptxas's own lines on registers, spills, shared memory, barriers.

    A kernel file of the kit includes no torch header, so nvcc compiles it alone in about a second."""
    nvcc = tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            nvcc,
            "-c",
            f"-arch={arch}",
            "-O3",
            "-DLABKIT_WITH_CUDA",
            "-Xptxas",
            "-v",
            *flags,
            "-I",
            str(ROOT / "kernels" / "common"),
            str(cu),
            "-o",
            str(Path(tmp) / "k.o"),
        ]
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
            rows.append(
                {
                    "kernel": kernel,
                    "arch": arch,
                    "registers": int(fields["REG"]),
                    "stack": int(fields["STACK"]),
                    "shared": _declared_shared(int(fields["SHARED"]), arch),
                    "local": int(fields["LOCAL"]),
                }
            )
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
    limits = {
        "threads": max_warps // warps,
        "registers": (REGISTERS_PER_SM // max(per_warp, REGISTER_UNIT)) // warps,
        "shared memory": props.shared_memory_per_multiprocessor // per_block,
        "blocks per SM": MAX_BLOCKS_PER_SM.get((props.major, props.minor), 16),
    }
    blocks = min(limits.values())
    return {
        "blocks_per_sm": blocks,
        "occupancy": blocks * warps / max_warps,
        "limited_by": [k for k, v in limits.items() if v == blocks],
    }


def ptx_counts(cu, flags=(), arch="sm_90"):
    """Count a few telling instructions in the PTX nvcc makes of a torch-free .cu file: no GPU needed.

    ex2.approx is the hardware's 2^x (every exp is built on it; the accurate ones add corrections around it); .ftz
    means subnormal inputs and results are flushed to zero."""
    nvcc = tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    cmd = [
        nvcc,
        "-ptx",
        f"-arch={arch}",
        "-O3",
        "-DLABKIT_WITH_CUDA",
        *flags,
        "-I",
        str(ROOT / "kernels" / "common"),
        str(cu),
        "-o",
        "-",
    ]
    ptx = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    instructions = [
        ln.split()[0]
        for ln in ptx.splitlines()
        if ln.strip() and not ln.strip().startswith(("//", ".")) and ln.startswith("\t")
    ]
    return {
        "instructions": len(instructions),
        "ex2.approx": sum(i.startswith("ex2.approx") for i in instructions),
        ".ftz (flush subnormals)": sum(".ftz" in i for i in instructions),
    }
