"""What --use_fast_math does to ELU, for 05_debugging.ipynb: the float32 distance in ulps between two results, inputs
where ELU's arithmetic is hard, and ELU built both ways measured against PyTorch's own (GPU only; the PTX side of the
story, which needs no GPU, is kit.resources.ptx_counts).
"""

import torch

from kit.devices import run_isolated


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
    return {
        "differ": int(((y != ref) & ~both_nan).sum()),
        "of": y.numel(),
        "max_ulps": int(ulps.max()),
        "max_abs": float(torch.where(both_nan, 0, (y.double() - ref.double()).abs()).max()),
        "worst_x": float(x[worst]),
        "worst_y": float(y[worst]),
        "worst_ref": float(ref[worst]),
    }


def elu_inputs(device):
    """Where ELU's arithmetic is hard: across [-20, 20], the tiny negatives where e^x - 1 cancels, and subnormals."""
    return torch.cat(
        [
            torch.linspace(-20, 20, 1 << 20, device=device),
            -torch.logspace(-45, 0, 8192, device=device),
            torch.tensor([-1e-40, -1e-39, -1e-38, 1e-40], device=device),
        ]
    )


def fast_math_effect(isolated=True):
    """ELU built twice, by default and with --use_fast_math (on a scratch copy: CUDA_FLAGS in its op.py), each
    measured against PyTorch's own F.elu and elu_backward on the same inputs. GPU only. Returns a list of rows.

    isolated: in a child process. The second build takes over the registered labkit::elu* kernels for a while; a
    notebook's own process should not have to live through that (a Jupyter kernel can die of it)."""
    if isolated:
        r = run_isolated(
            "from kit.fast_math import fast_math_effect\nreport(fast_math_effect(isolated=False))", timeout=900
        )
        if r.result is None:
            raise RuntimeError(
                f"fast_math_effect failed in its child process (exit code {r.returncode}):\n"
                f"{(r.stdout + r.stderr)[-3000:]}"
            )
        return r.result
    import torch.nn.functional as F

    from kit.notebook import scratch_kit
    from loader import ops

    lab, kernels = scratch_kit("elu")
    with open(kernels / "elu" / "op.py", "a") as f:
        f.write('\nCUDA_FLAGS = ["--use_fast_math"]  # added by kit.fast_math.fast_math_effect\n')
    x = elu_inputs("cuda")
    g = torch.randn(x.numel(), device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    ref, ref_grad = F.elu(x), torch.ops.aten.elu_backward(g, 1.0, 1, 1, False, x)
    rows = []
    try:
        for build, elu in (("default", ops.elu), ("--use_fast_math", lab.elu)):
            y = elu(x)  # also makes this build's library the one that runs labkit::elu*
            grad = torch.ops.labkit.elu_backward(g, x, 1.0)
            seed = elu(x, version="seed")
            for kernel, out, reference in (
                ("ops.elu forward (expm1f)", y, ref),
                ("elu_backward (expf)", grad, ref_grad),
                ("seed kernel (expf(x) - 1)", seed, ref),
            ):
                rows.append({"build": build, "kernel": kernel, **compare(x, out, reference)})
    finally:
        ops.elu(x)  # the real kit's build runs labkit::elu* again, whatever happened
    return rows
