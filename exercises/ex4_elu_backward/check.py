"""Exercise 4: ELU's backward.

The forward is given: `y = x` for `x > 0`, `y = alpha * (exp(x) - 1)` for `x <= 0`. Autograd hands the backward
`grad_out = dL/dy` and wants `grad_in = dL/dx = grad_out * dy/dx`. Write `elu_backward_thread` in
`ex4_elu_backward.h` (roughly 2 lines). Work out `dy/dx` on paper for both branches first, and mind which branch
`x == 0` belongs to (PyTorch's `F.elu` puts it with `x <= 0`). float32 and float64; the CPU runs the same thread
functions, so a laptop can do this exercise too.

Checked against autograd through `F.elu`, in float32 and float64, alpha 1, 0.5 and 2, `x == 0` included, on every
device here.

In 02_elu.ipynb; grade it there with `check("ex4_elu_backward")`, or `python -m kit.grade ex4_elu_backward`."""

import math

import torch

from kit.checks import begin, devices, first_mismatch

NUMBER = 4  # its place in the lessons
EDIT = "exercises/ex4_elu_backward/ex4_elu_backward.h"  # the file to edit


def diagnosis(x, g, alpha, got):
    """The hint for a wrong gradient `got` at one element (x, grad_out g), told from the known mistakes."""

    def near(value):
        return math.isclose(got, value, rel_tol=1e-5, abs_tol=1e-6)

    if x == 0:
        return (
            "wrong at x == 0 exactly: the spec says which branch x == 0 belongs to; does your condition put it there?"
        )
    if x < 0 and near(g * alpha * math.expm1(x)):
        return "that is grad_out times the forward's value, not its derivative: differentiate alpha * (exp(x) - 1)"
    if near(alpha * math.exp(x) if x < 0 else 1.0):
        return "that is dy/dx alone: autograd wants grad_out * dy/dx"
    return (
        "work dy/dx out on paper for each branch of the forward (x > 0, x <= 0), then grad_in = grad_out * dy/dx; "
        "which branch is wrong here?"
    )


def grade(ops, kit_root):
    report, op = begin(ops, "ex4_elu_backward", EDIT)
    if op is None:
        return report
    sizes = [1, 3, 255, 257, 1025, 4099]
    for dev in devices():
        for dtype in (torch.float32, torch.float64):
            failure = None
            for alpha in (1.0, 0.5, 2.0):
                for n in sizes:
                    gen = torch.Generator().manual_seed(n)
                    x = (torch.randn(n, generator=gen, dtype=torch.float64) * 3).to(dtype)
                    x[::7] = 0.0  # x == 0 exactly: which branch does it take?
                    x = x.to(dev).requires_grad_()
                    g = torch.randn(n, generator=gen, dtype=torch.float64).to(dtype).to(dev)
                    (ours,) = torch.autograd.grad(op(x, alpha), x, g)
                    xr = x.detach().clone().requires_grad_()
                    (ref,) = torch.autograd.grad(torch.nn.functional.elu(xr, alpha), xr, g)
                    m = first_mismatch(ref, ours)
                    if m and failure is None:
                        failure = (n, alpha, m, float(x.detach().flatten()[m[0]]), float(g.flatten()[m[0]]))
            name = f"gradient matches F.elu's on {dev}, {str(dtype).replace('torch.', '')}"
            if failure:
                n, alpha, (i, e, got), xv, gv = failure
                report.add(
                    name,
                    False,
                    f"smallest failing n = {n} (alpha = {alpha}): at x = {xv:.6g} the gradient "
                    f"should be {e:.6g}, got {got:.6g}",
                    diagnosis(xv, gv, alpha, got),
                )
            else:
                report.add(name, True, f"{len(sizes)} sizes, alpha 1, 0.5 and 2, x == 0 included")
    return report
