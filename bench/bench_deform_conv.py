"""deform_conv2d's part of `make bench` (bench/run.py imports this file and calls `run(bench)`). On a GPU only: on the
CPU there is nothing to compare that says anything about the kernels.

A detector's deformable convolution (DCNv2, as in a ResNet stage or an FPN level of a deformable detector): N = 8
images of C_in = C_out = 256 x 64 x 64, a 3 x 3 kernel, stride 1, padding 1, with a mask and a bias; offset groups 1
and 4 (offset (N, 2 * groups * 9, 64, 64), mask (N, groups * 9, 64, 64)). Offsets randn * 2 pixels (fractional, some
samples off the map), mask uniform in [0, 1); float32 and float16. Ours (ops.deform_conv2d) against torchvision's
(torchvision.ops.deform_conv2d, its CUDA kernels), both through their Python calls:
  forward            no input requires grad: no autograd on either side
  forward+backward   input, offset, weight, bias and mask require grad: the forward, then torch.autograd.grad of all
                     five against a fixed random grad of the output (returned, not accumulated into .grad)
Before timing, one forward of each is compared (relative error under 1e-2: a broken kernel is off by far more).

n is the number of offset groups. The rows count flops, so they are tabled and plotted in TFLOP/s: the convolution's
2 * N * C_out * C_in * 9 * H * W (38.7 GFLOP) for the forward, 3x that for forward+backward (the gradients of the input
side and of the weight are a matmul each); the sampling's bilinear interpolation is not counted. Bytes: what the pass
must move at least: input, offset, mask, weight and bias read and the output written (forward); forward+backward
also reads the output's gradient and writes the five gradients, 2x the forward's bytes. The kernels gather far more
than that (the column buffer), so bytes are a yardstick, not a bandwidth.
"""

import torch

from loader import ops

N, C, H, W = 8, 256, 64, 64
KERNEL = 3
OFFSET_GROUPS = (1, 4)
PASSES = ("forward", "forward+backward")
DTYPES = (torch.float32, torch.float16)

# Ours at least as fast as torchvision's kernels: both passes, both dtypes, both offset-group settings
BARS = [
    {
        "op": "deform_conv2d",
        "pass": pass_,
        "dtype": dtype,
        "min_n": groups,
        "max_n": groups,
        "impl": "ours",
        "vs": "torch",
        "at_least": 1.00,
        "device": "cuda",
    }
    for pass_ in PASSES
    for dtype in ("float32", "float16")
    for groups in OFFSET_GROUPS
]
# what n is in each pass's plot (bench/run.py's save_plots reads them from bench.json's "deform_conv2d")
XLABELS = {p: f"n = offset groups (N {N}, C {C}, {H} x {W}, {KERNEL} x {KERNEL})" for p in PASSES}


def detector_inputs(groups, dtype, device, n=N, c=C, h=H, w=W, seed=0):
    """input, offset, weight, bias, mask: offsets randn * 2 pixels, mask uniform [0, 1), weight scaled by
    1 / sqrt(C_in * 9) so that the output is of order 1 (float16 stays far from overflow)."""
    g = torch.Generator().manual_seed(seed)
    taps = KERNEL * KERNEL
    x = torch.randn(n, c, h, w, generator=g)
    offset = torch.randn(n, 2 * groups * taps, h, w, generator=g) * 2
    weight = torch.randn(c, c, KERNEL, KERNEL, generator=g) / (c * taps) ** 0.5
    bias = torch.randn(c, generator=g)
    mask = torch.rand(n, groups * taps, h, w, generator=g)
    return [t.to(device, dtype) for t in (x, offset, weight, bias, mask)]


def time_shape(bench, n=N, c=C, h=H, w=W):
    """Every row at one shape (the detector's by default): both passes, dtypes and offset-group settings."""
    import torchvision

    impls = {
        "ours": lambda x, o, wt, b, m: ops.deform_conv2d(x, o, wt, b, padding=1, mask=m),
        "torch": lambda x, o, wt, b, m: torchvision.ops.deform_conv2d(x, o, wt, b, padding=1, mask=m),
    }
    for dtype in DTYPES:
        for groups in OFFSET_GROUPS:
            inputs = detector_inputs(groups, dtype, bench.device, n, c, h, w)
            with torch.no_grad():
                ours, ref = (f(*inputs).float() for f in impls.values())
            error = ((ours - ref).norm() / ref.norm()).item()
            assert error < 1e-2, f"deform_conv2d differs from torchvision's ({dtype}, {groups} offset groups): {error}"
            flops = 2 * n * c * c * KERNEL * KERNEL * h * w
            nbytes = (sum(t.numel() for t in inputs) + ref.numel()) * inputs[0].element_size()
            grad = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1)).to(bench.device, dtype)
            leaves = [t.detach().requires_grad_() for t in inputs]
            ours = ref = None
            for impl, f in impls.items():
                bench.measure("deform_conv2d", "forward", dtype, groups, impl, lambda f=f: f(*inputs), nbytes, flops)
            for impl, f in impls.items():
                step = lambda f=f: torch.autograd.grad(f(*leaves), leaves, grad)  # noqa: E731
                bench.measure("deform_conv2d", "forward+backward", dtype, groups, impl, step, 2 * nbytes, 3 * flops)
            inputs = leaves = grad = None
            if bench.device.type == "cuda":
                torch.cuda.empty_cache()


def run(bench):
    if bench.device.type != "cuda":
        print("  deform_conv2d: GPU only (torchvision's CUDA kernels are the reference); nothing measured on the CPU")
        return
    bench.extra["deform_conv2d"] = {"xlabels": XLABELS}
    time_shape(bench)
