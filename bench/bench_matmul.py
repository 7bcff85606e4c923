"""matmul's part of `make bench` (bench/run.py imports this file and calls `run(bench)`).

Square C = A @ B (n = M = N = K, 256 to 8192) in float32 and bfloat16: ours (torch.ops.labkit.matmul: version 6,
"vec", for float32; version 7, "wmma", tensor cores, for bfloat16) against torch.matmul (cuBLAS), and on a GPU the
lesson's versions 1-5 (float32) beside them. torch.matmul's float32 runs with TF32 off, so both sides do float32
FMAs (TF32 would round the inputs to 10 bits of mantissa and run on the tensor cores: a different operation).

Rows carry flops = 2 n^3 (run.py tables and plots them in TFLOP/s). bench.extra["matmul"] keeps the device's peaks
(SMs x clock x per-SM rate, the boost clock of cudaDeviceProp: an upper bound) and each kernel's registers,
spills and shared memory (cuobjdump on the built library) with the occupancy they allow (kit.debugging).

Napkin math for the slow versions: naive does ~1 TFLOP/s at best (issue 17: 0.25 flop/byte), so at 8192 one call
is > 1 s; versions 1-2 stop at 4096 (0.1-0.3 s a call, 10 repetitions).
"""
import torch

from kit import resources as debugging
from loader import ops

GPU_SIZES = [256, 512, 1024, 2048, 4096, 8192]
GPU_QUICK = [1024, 4096]  # 4096 kept: the bars are judged there
CPU_SIZES = [64, 128, 256]  # the CPU path, to exercise the code
FLOAT32_VERSIONS = {"naive": 1, "coalesced": 2, "smem": 3, "reg1d": 4, "reg2d": 5}  # "vec" (6) is ours
LARGEST = {"naive": 4096, "coalesced": 4096}
# threads per block of each kernel (matmul.cu's launchers), for the occupancy its registers and shared memory allow
THREADS = {"matmul_naive_kernel": 1024, "matmul_coalesced_kernel": 1024, "matmul_smem_kernel": 1024,
           "matmul_reg1d_kernel": 512, "matmul_reg2d_kernel": 256, "matmul_vec_kernel": 256, "matmul_wmma_kernel": 128}
# flops per clock per SM: float32 FMA lanes x 2, and dense bfloat16 tensor-core flops (NVIDIA's architecture papers)
FP32_PER_CLOCK = {(8, 0): 128, (8, 6): 256, (8, 9): 256, (9, 0): 256}
BF16_PER_CLOCK = {(8, 0): 2048, (9, 0): 4096}

# Issue 17, at 4096^3: the best float32 version >= 0.60x torch.matmul float32 (TF32 off); the tensor-core version
# >= 0.20x torch.matmul bfloat16
BARS = [{"op": "matmul", "pass": "square", "dtype": "float32", "min_n": 4096, "max_n": 4096, "impl": "ours",
         "vs": "torch", "at_least": 0.60, "device": "cuda"},
        {"op": "matmul", "pass": "square", "dtype": "bfloat16", "min_n": 4096, "max_n": 4096, "impl": "ours",
         "vs": "torch", "at_least": 0.20, "device": "cuda"}]


def peaks(props):
    """{"float32": TFLOP/s, "bfloat16": TFLOP/s or None} from SMs x clock x flops per clock per SM."""
    cc, sms, hz = (props.major, props.minor), props.multi_processor_count, getattr(props, "clock_rate", 0) * 1e3
    return {dtype: table[cc] * sms * hz / 1e12 if cc in table and hz else None
            for dtype, table in (("float32", FP32_PER_CLOCK), ("bfloat16", BF16_PER_CLOCK))}


def resources(props):
    """Per kernel of the built CUDA library: registers, spills (local bytes), shared memory, and occupancy."""
    rows = []
    for r in debugging.resource_usage(ops.matmul.build_dir() / "labkit_matmul.so"):
        name = r["kernel"].split("<")[0].split("(")[0]
        if name in THREADS and r["arch"].startswith(f"sm_{props.major}{props.minor}"):  # sm_90a too
            rows.append({**r, "threads": THREADS[name],
                         **debugging.theoretical_occupancy(r["registers"], r["shared"], THREADS[name], props)})
    return rows


def run(bench):
    dev = bench.device
    gpu = dev.type == "cuda"
    sizes = (GPU_QUICK if bench.quick else GPU_SIZES) if gpu else CPU_SIZES
    ops.matmul(torch.ones(2, 2, device=dev), torch.ones(2, 2, device=dev))  # build and load before timing
    ours, version = torch.ops.labkit.matmul.default, torch.ops.labkit.matmul_version.default
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for dtype in (torch.float32, torch.bfloat16):
            for n in sizes:
                a = torch.randn(n, n, device=dev, dtype=dtype)
                b = torch.randn(n, n, device=dev, dtype=dtype)
                flops, nbytes = 2 * n ** 3, 3 * n * n * a.element_size()
                bench.measure("matmul", "square", dtype, n, "ours", lambda: ours(a, b), nbytes, flops)
                bench.measure("matmul", "square", dtype, n, "torch", lambda: torch.matmul(a, b), nbytes, flops)
                if gpu and dtype == torch.float32:
                    for name, v in FLOAT32_VERSIONS.items():
                        if n <= LARGEST.get(name, n):
                            bench.measure("matmul", "square", dtype, n, name, lambda v=v: version(a, b, v), nbytes,
                                          flops)
                del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    if gpu:
        props = torch.cuda.get_device_properties(dev)
        bench.extra["matmul"] = {
            "peak_tflops": peaks(props),
            "peak_source": f"{props.multi_processor_count} SMs x {getattr(props, 'clock_rate', 0) / 1e6:.2f} GHz "
                           "(boost clock; 0: this torch does not say) x flops per clock per SM (float32 FMA lanes x 2; "
                           "dense bfloat16 tensor cores)",
            "resources": []}
        try:
            bench.extra["matmul"]["resources"] = resources(props)
        except (OSError, RuntimeError) as e:  # no cuobjdump here: the timings stand without it
            bench.extra["matmul"]["resources_error"] = str(e)
