"""ELU's part of `make bench` (bench/run.py imports this file and calls `run(bench)`).

Measures, at every size of bench.sizes: our forward and backward kernels against PyTorch's own (F.elu, and
aten.elu_backward, the kernel F.elu's autograd runs), and the ELU tutorial's two kernels (float32 forward), for
float32 and bfloat16; float16 and float64 from 2^24 elements up, where the speed bar is set. Each row records the
bytes the op must move (forward: read x, write y; backward: read grad_out and x, write grad_in), from which
run.py computes GB/s and sets each against a copy of the same bytes.

The backward is timed alone (one kernel call, not an autograd graph), the same for ours and PyTorch's. Ours is
called as torch.ops.labkit.* directly, as PyTorch's are: what ops.elu adds on the host (its edit check and friendly
call) is measured apart, per call, by bench/calls.py.
"""

import torch
import torch.nn.functional as F

from loader import ops

ALPHA = 1.0  # the tutorial's kernels have alpha fixed at 1
BIG = 1 << 24  # float16 and float64 are measured from here up
DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)

# The bars, from 2^24 elements on. A memory-bound kernel can do no better than a copy of the same bytes, so every
# pass in every dtype is held to 0.97 of one; and float32's forward to F.elu's own speed. The 16-bit passes are not
# held to a multiple of F.elu: at 2^24 a copy itself is only ~1.46x F.elu there, so no kernel could reach 1.5x.
BARS = [
    {
        "op": "elu",
        "pass": pass_,
        "dtype": dtype,
        "min_n": BIG,
        "impl": "ours",
        "vs": "copy",
        "at_least": 0.97,
        "device": "cuda",
    }
    for pass_ in ("forward", "backward")
    for dtype in ("float32", "float64", "bfloat16", "float16")
]
BARS.append(
    {
        "op": "elu",
        "pass": "forward",
        "dtype": "float32",
        "min_n": BIG,
        "impl": "ours",
        "vs": "torch",
        "at_least": 1.00,
        "device": "cuda",
    }
)


def run(bench):
    dev = bench.device
    ops.elu(torch.zeros(8, device=dev))  # build and load the op before anything is timed
    elu, elu_backward = torch.ops.labkit.elu.default, torch.ops.labkit.elu_backward.default
    aten_elu_backward = torch.ops.aten.elu_backward.default
    seeds = {"seed": torch.ops.labkit.elu_seed.default, "seed_smem": torch.ops.labkit.elu_seed_smem.default}
    for dtype in DTYPES:
        size = torch.empty((), dtype=dtype).element_size()
        for n in bench.sizes:
            if dtype in (torch.float16, torch.float64) and n < BIG:
                continue
            # x, grad_out, and up to three results alive at once during timing and checking
            if not _fits(dev, 5 * n * size):
                print(f"[bench elu] skipped {dtype} n={n}: {5 * n * size / 1e9:.1f} GB does not fit on {dev}")
                continue
            x = torch.randn(n, device=dev, dtype=dtype)
            grad_out = torch.randn(n, device=dev, dtype=dtype)
            forward, backward = 2 * n * size, 3 * n * size

            # validate, then time: a fast wrong kernel is worth nothing
            torch.testing.assert_close(elu(x, ALPHA), F.elu(x, ALPHA))
            torch.testing.assert_close(
                elu_backward(grad_out, x, ALPHA), aten_elu_backward(grad_out, ALPHA, 1, 1, False, x)
            )
            bench.measure("elu", "forward", dtype, n, "ours", lambda: elu(x, ALPHA), forward)
            bench.measure("elu", "forward", dtype, n, "torch", lambda: F.elu(x, ALPHA), forward)
            if dtype == torch.float32 and dev.type == "cuda":
                for impl, seed in seeds.items():
                    torch.testing.assert_close(seed(x), F.elu(x, ALPHA))  # expf(x) - 1: the default tolerance
                    bench.measure("elu", "forward", dtype, n, impl, lambda seed=seed: seed(x), forward)
            bench.measure("elu", "backward", dtype, n, "ours", lambda: elu_backward(grad_out, x, ALPHA), backward)
            bench.measure(
                "elu",
                "backward",
                dtype,
                n,
                "torch",
                lambda: aten_elu_backward(grad_out, ALPHA, 1, 1, False, x),
                backward,
            )
            x = grad_out = None


def _fits(device, nbytes):
    if device.type != "cuda":
        return True
    free, _ = torch.cuda.mem_get_info(device)
    return nbytes < 0.8 * free
