"""matmul's part of `make bench` (bench/run.py imports this file and calls `run(bench)`).

Square C = A @ B (n = M = N = K, 256 to 8192) in float32, bfloat16 and float16: ours (torch.ops.labkit.matmul: what
ops.matmul runs; on an H200 version 14, "pipelined", for float32 and the Hopper kernels of matmul_hopper.cu for 16
bits) against torch.matmul (cuBLAS), and on a GPU the lesson's versions beside them: 1-6 and 13 in float32, and in bfloat16 the
tensor-core versions from WMMA (7) up the Hopper ladder (8-12, on a Hopper GPU). torch.matmul's float32 runs with TF32
off, so both sides do float32 FMAs (TF32 would round the inputs to 10 bits of mantissa and run on the tensor cores: a
different operation).

Other shapes, each its own "pass" (n is M there):
  skinny     512 x 8192 x 512 (M x N x K), float32 and bfloat16: few output tiles for 132 SMs
  long-k     M = N from 256 to 2048 at K = 8192, float32, bfloat16 and float16: a small output and a long sum, where
             ops.matmul cuts K into ranges (split-K, version 15) while the output's tiles fill too few SMs
  tall       16384 x 1024 x 1024 (M x N x K), bfloat16: many tiles, each of only 16 steps of 64
  unaligned  4095 x 4097 x 4093 in bfloat16, beside ours at 4096^3 ("ours_aligned", the same n): inputs that TMA
             cannot read are copied with padded rows, and tile counts that fill the last wave badly
  harness    4096 x 5120 x 4096 in float16, each call timed as a competition harness times it: the GPU idle, CUDA
             events around one call, the median of 30

Rows carry flops (run.py tables and plots them in TFLOP/s, and judges the bars by them). bench.extra["matmul"] keeps
the device's peaks (SMs x clock x per-SM rate, the boost clock of cudaDeviceProp: an upper bound) and each kernel's
registers, spills and shared memory (cuobjdump on the built library) with the occupancy they allow.

Napkin math for the slow versions: naive does ~1 TFLOP/s at best (0.25 flop/byte from DRAM), so at 8192 one call
is > 1 s; versions 1-2 stop at 4096 (0.1-0.3 s a call, 10 repetitions).
"""

import time

import torch

from kit import resources, timing
from loader import ops

GPU_SIZES = [256, 512, 1024, 2048, 4096, 8192]
GPU_QUICK = [1024, 4096, 8192]  # 4096 and 8192 kept: the bars are judged there
CPU_SIZES = [64, 128, 256]  # the CPU path, to exercise the code
# float32's ladder; "pipelined" (14) is ours
FLOAT32_VERSIONS = {"naive": 1, "coalesced": 2, "smem": 3, "reg1d": 4, "reg2d": 5, "vec": 6, "warptile": 13}
TENSOR_CORE_VERSIONS = {"wmma": 7}
HOPPER_VERSIONS = {"wgmma": 8, "warpspec": 9, "wide": 10, "persistent": 11, "tall": 12}
LARGEST = {"naive": 4096, "coalesced": 4096}
# threads per block of each kernel (matmul.cu's and matmul_hopper.cu's launchers), for the occupancy its registers
# and shared memory allow
THREADS = {
    "matmul_naive_kernel": 1024,
    "matmul_coalesced_kernel": 1024,
    "matmul_smem_kernel": 1024,
    "matmul_reg1d_kernel": 512,
    "matmul_reg2d_kernel": 256,
    "matmul_vec_kernel": 256,
    "matmul_warptile_kernel": 256,
    "matmul_wmma_kernel": 128,
    "matmul_tma_wgmma_kernel": 128,
}
# flops per clock per SM: float32 FMA lanes x 2, and dense bfloat16 tensor-core flops (NVIDIA's architecture papers)
FP32_PER_CLOCK = {(8, 0): 128, (8, 6): 256, (8, 9): 256, (9, 0): 256}
BF16_PER_CLOCK = {(8, 0): 2048, (9, 0): 4096}
SKINNY = (512, 8192, 512)
UNALIGNED = (4095, 4097, 4093)
HARNESS = (4096, 5120, 4096)
LONG_K = 8192  # the long-k pass: M = N = n, K = LONG_K
LONG_K_SIZES = [256, 512, 1024, 2048]
LONG_K_QUICK = [512, 1024]  # the bars are judged there
TALL = (16384, 1024, 1024)
# what n is in each pass's plot (bench/run.py's save_plots reads them from bench.json's "matmul")
XLABELS = {
    "square": "n (M = N = K)",
    "skinny": f"n = M (N = {SKINNY[1]}, K = {SKINNY[2]})",
    "unaligned": f"n = M ({UNALIGNED[0]} x {UNALIGNED[1]} x {UNALIGNED[2]}, M x N x K)",
    "harness": f"n = M ({HARNESS[0]} x {HARNESS[1]} x {HARNESS[2]}, M x N x K)",
    "long-k": f"n (M = N, K = {LONG_K})",
    "tall": f"n = M (N = {TALL[1]}, K = {TALL[2]})",
}


def _bar(pass_, dtype, at_least, n_from, n_to=None, impl="ours", vs="torch"):
    return {
        "op": "matmul",
        "pass": pass_,
        "dtype": dtype,
        "min_n": n_from,
        "max_n": n_to or n_from,
        "impl": impl,
        "vs": vs,
        "at_least": at_least,
        "device": "cuda",
    }


# At 4096^3 and 8192^3: 16 bits at least 0.70x torch.matmul (the tensor-core kernels against cuBLAS), float32 at
# least 0.75x; the skinny product at least 0.5x; the harness's one call at least 0.70x; a shape no multiple of any
# tile within 15% of the speed at the nearest multiple; a long K (512 x 8192 x 512 and 1024 x 8192 x 1024, M x K x N)
# at least 0.7x in every dtype; many short tiles (16384 x 1024 x 1024) at least 0.9x.
BARS = [
    _bar("square", "bfloat16", 0.70, 4096, 8192),
    _bar("square", "float16", 0.70, 4096, 8192),
    _bar("square", "float32", 0.75, 4096, 8192),
    _bar("skinny", "bfloat16", 0.5, SKINNY[0]),
    _bar("skinny", "float32", 0.5, SKINNY[0]),
    _bar("harness", "float16", 0.70, HARNESS[0]),
    _bar("unaligned", "bfloat16", 0.85, UNALIGNED[0], vs="ours_aligned"),
    _bar("long-k", "bfloat16", 0.7, 512, 1024),
    _bar("long-k", "float16", 0.7, 512, 1024),
    _bar("long-k", "float32", 0.7, 512, 1024),
    _bar("tall", "bfloat16", 0.9, TALL[0]),
]


def peaks(props):
    """{"float32": TFLOP/s, "bfloat16": TFLOP/s or None} from SMs x clock x flops per clock per SM."""
    cc, sms, hz = (props.major, props.minor), props.multi_processor_count, getattr(props, "clock_rate", 0) * 1e3
    return {
        dtype: table[cc] * sms * hz / 1e12 if cc in table and hz else None
        for dtype, table in (("float32", FP32_PER_CLOCK), ("bfloat16", BF16_PER_CLOCK))
    }


def kernel_threads(name, kernel):
    """Threads per block of a kernel of the built library: the table above, or for the warp-specialized Hopper kernel
    one warpgroup per consumer plus the producer's (its template arguments: T, rows, columns, consumers, persistent)."""
    if name in THREADS:
        return THREADS[name]
    if name == "matmul_wgmma_ws_kernel":
        consumers = int(kernel.split("<")[1].split(",")[3])
        return 128 * (consumers + 1)
    return None


def resource_rows(props):
    """Per kernel of the built CUDA library: registers, spills (local bytes), shared memory, and occupancy."""
    rows = []
    for r in resources.resource_usage(ops.matmul.build_dir() / "labkit_matmul.so"):
        name = r["kernel"].split("<")[0].split("::")[-1].split("(")[0]  # "(anonymous namespace)::" off too
        threads = kernel_threads(name, r["kernel"])
        if threads and r["arch"].startswith(f"sm_{props.major}{props.minor}"):  # sm_90a too
            rows.append(
                {
                    **r,
                    "threads": threads,
                    **resources.theoretical_occupancy(r["registers"], r["shared"], threads, props),
                }
            )
    return rows


def one_call(fn, reps=30):
    """A competition harness's timing: the GPU idle (synchronized, then 2 ms of nothing), CUDA events around one call;
    the median and quartiles of `reps` such calls."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        time.sleep(0.002)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return timing.summarize(times)


def _inputs(m, n, k, dtype, dev):
    return torch.randn(m, k, device=dev, dtype=dtype), torch.randn(k, n, device=dev, dtype=dtype)


def _cost(m, n, k, a):
    return 2 * m * n * k, (m * k + k * n + m * n) * a.element_size()  # flops, bytes of A, B and C once each


def run(bench):
    dev = bench.device
    gpu = dev.type == "cuda"
    sizes = (GPU_QUICK if bench.quick else GPU_SIZES) if gpu else CPU_SIZES
    ops.matmul(torch.ones(2, 2, device=dev), torch.ones(2, 2, device=dev))  # build and load before timing
    ours, version = torch.ops.labkit.matmul.default, torch.ops.labkit.matmul_version.default
    hopper = gpu and torch.cuda.get_device_capability(dev) == (9, 0)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            lesson = {
                torch.float32: FLOAT32_VERSIONS,
                torch.bfloat16: {**TENSOR_CORE_VERSIONS, **(HOPPER_VERSIONS if hopper else {})},
            }.get(dtype, {})
            for n in sizes:
                a, b = _inputs(n, n, n, dtype, dev)
                flops, nbytes = _cost(n, n, n, a)
                bench.measure("matmul", "square", dtype, n, "ours", lambda: ours(a, b), nbytes, flops)
                bench.measure("matmul", "square", dtype, n, "torch", lambda: torch.matmul(a, b), nbytes, flops)
                for name, v in lesson.items() if gpu else ():
                    if n <= LARGEST.get(name, n):
                        bench.measure("matmul", "square", dtype, n, name, lambda v=v: version(a, b, v), nbytes, flops)
                del a, b
        if gpu:
            for dtype in (torch.float32, torch.bfloat16):
                a, b = _inputs(*SKINNY, dtype, dev)
                flops, nbytes = _cost(*SKINNY, a)
                for impl, fn in (("ours", lambda: ours(a, b)), ("torch", lambda: torch.matmul(a, b))):
                    bench.measure("matmul", "skinny", dtype, SKINNY[0], impl, fn, nbytes, flops)
            a, b = _inputs(*UNALIGNED, torch.bfloat16, dev)
            flops, nbytes = _cost(*UNALIGNED, a)
            for impl, fn in (("ours", lambda: ours(a, b)), ("torch", lambda: torch.matmul(a, b))):
                bench.measure("matmul", "unaligned", torch.bfloat16, UNALIGNED[0], impl, fn, nbytes, flops)
            n = UNALIGNED[0] + 1  # the nearest multiple of every tile
            a, b = _inputs(n, n, n, torch.bfloat16, dev)
            flops, nbytes = _cost(n, n, n, a)
            bench.measure(
                "matmul", "unaligned", torch.bfloat16, UNALIGNED[0], "ours_aligned", lambda: ours(a, b), nbytes, flops
            )
            a, b = _inputs(*HARNESS, torch.float16, dev)
            flops, nbytes = _cost(*HARNESS, a)
            for impl, fn in (("ours", lambda: ours(a, b)), ("torch", lambda: a @ b)):
                bench.measure("matmul", "harness", torch.float16, HARNESS[0], impl, fn, nbytes, flops, timer=one_call)
            for dtype in (torch.float32, torch.bfloat16, torch.float16):
                for n in LONG_K_QUICK if bench.quick else LONG_K_SIZES:
                    a, b = _inputs(n, n, LONG_K, dtype, dev)
                    flops, nbytes = _cost(n, n, LONG_K, a)
                    for impl, fn in (("ours", lambda: ours(a, b)), ("torch", lambda: torch.matmul(a, b))):
                        bench.measure("matmul", "long-k", dtype, n, impl, fn, nbytes, flops)
            a, b = _inputs(*TALL, torch.bfloat16, dev)
            flops, nbytes = _cost(*TALL, a)
            for impl, fn in (("ours", lambda: ours(a, b)), ("torch", lambda: torch.matmul(a, b))):
                bench.measure("matmul", "tall", torch.bfloat16, TALL[0], impl, fn, nbytes, flops)
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    if gpu:
        props = torch.cuda.get_device_properties(dev)
        bench.extra["matmul"] = {
            "xlabels": XLABELS,
            "peak_tflops": peaks(props),
            "peak_source": f"{props.multi_processor_count} SMs x {getattr(props, 'clock_rate', 0) / 1e6:.2f} GHz "
            "(boost clock; 0: this torch does not say) x flops per clock per SM (float32 FMA lanes x 2; "
            "dense bfloat16 tensor cores)",
            "chosen": {
                f"{dtype} {m}x{n}x{k}": ops.matmul(*_inputs(m, n, k, dtype, dev), which=True)
                for dtype in (torch.float32, torch.bfloat16, torch.float16)
                for m, n, k in ((4096, 4096, 4096), SKINNY, UNALIGNED, HARNESS, (512, 512, LONG_K), TALL)
            },
            "splits": {
                f"{dtype} {n}x{n}x{LONG_K}": ops.matmul(*_inputs(n, n, LONG_K, dtype, dev), splits=True)
                for dtype in (torch.float32, torch.bfloat16, torch.float16)
                for n in LONG_K_SIZES
            },
            "resources": [],
        }
        try:
            bench.extra["matmul"]["resources"] = resource_rows(props)
        except (OSError, RuntimeError) as e:  # no cuobjdump here: the timings stand without it
            bench.extra["matmul"]["resources_error"] = str(e)
