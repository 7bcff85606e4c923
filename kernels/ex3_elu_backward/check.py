"""Exercise 3: ELU's backward.

The forward is given; write `elu_backward_thread` in `ex3_elu_backward.h` (roughly 2 lines):
`grad_in = grad_out * dy/dx`. Work out `dy/dx` on paper first, and which branch `x == 0` belongs to.

Checked against autograd through `F.elu`, in float32 and float64, alpha 1, 0.5 and 2, `x == 0` included, on every
device here.

In 02_elu.ipynb; grade it there with `check("ex3_elu_backward")`, or `python -m kit.grade ex3_elu_backward`."""

import torch

from kit.checks import Report, devices, first_mismatch, load_op

NUMBER = 3  # its place in the lessons
EDIT = "kernels/ex3_elu_backward/ex3_elu_backward.h"  # the file to edit


def grade(ops, kit_root):
    report = Report("ex3_elu_backward", EDIT)
    op = load_op(ops, "ex3_elu_backward", report)
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
                    x[:: 7] = 0.0  # x == 0 exactly: which branch does it take?
                    x = x.to(dev).requires_grad_()
                    g = torch.randn(n, generator=gen, dtype=torch.float64).to(dtype).to(dev)
                    ours, = torch.autograd.grad(op(x, alpha), x, g)
                    xr = x.detach().clone().requires_grad_()
                    ref, = torch.autograd.grad(torch.nn.functional.elu(xr, alpha), xr, g)
                    m = first_mismatch(ref, ours)
                    if m and failure is None:
                        failure = (n, alpha, m, float(x.detach().flatten()[m[0]]))
            name = f"gradient matches F.elu's on {dev}, {str(dtype).replace('torch.', '')}"
            if failure:
                n, alpha, (i, e, got), xv = failure
                report.add(name, False, f"smallest failing n = {n} (alpha = {alpha}): at x = {xv:.6g} the gradient "
                           f"should be {e:.6g}, got {got:.6g}",
                           "dy/dx is 1 for x > 0 and alpha * exp(x) for x <= 0 (x == 0 included); times grad_out")
            else:
                report.add(name, True, f"{len(sizes)} sizes, alpha 1, 0.5 and 2, x == 0 included")
    return report
