"""Exercise 3: a new op from scratch.

Create the op in this folder (copy `kernels/add2/`'s files here and name files and functions after the folder,
`ex3_bias_relu`): `y[r, c] = max(x[r, c] + bias[c], 0)` for `x` of shape `[rows, cols]` and `bias` of shape
`[cols]`, in one pass, on CPU and GPU, with clear errors for a `bias` of the wrong length, a 1-D `x` and integer
tensors.

Checked against `torch.relu(x + bias)` on several shapes (a transposed, non-contiguous `x` too), and on bad input,
on every device here.

In 01_add2.ipynb; grade it there with `check("ex3_bias_relu")`, or `python -m kit.grade ex3_bias_relu`."""

import torch

from kit.checks import Report, child_ops_source, devices, first_mismatch, load_op

NUMBER = 3  # its place in the lessons
EDIT = "exercises/ex3_bias_relu/"  # the folder to write the op in


BAD_INPUTS = """
    import torch
    {ops}
    out = []
    for x, bias in [(torch.randn(4, 5, device={dev!r}), torch.randn(4, device={dev!r})),
                    (torch.randn(20, device={dev!r}), torch.randn(20, device={dev!r})),
                    (torch.randint(0, 3, (4, 5), device={dev!r}), torch.randint(0, 3, (5,), device={dev!r}))]:
        try:
            op(x, bias)
            {sync}
            out.append("accepted")
        except (RuntimeError, ValueError, TypeError) as e:
            out.append(type(e).__name__)
    report(out)
"""


def grade(ops, kit_root):
    from kit.devices import run_isolated

    report = Report("ex3_bias_relu", EDIT)
    if not (ops._kernels / "ex3_bias_relu" / "op.py").exists():
        report.add(
            "exercises/ex3_bias_relu/op.py exists",
            False,
            "no op.py in exercises/ex3_bias_relu",
            "copy the files of kernels/add2 into exercises/ex3_bias_relu, name files and functions after the "
            "folder (ex3_bias_relu), and write "
            "y[r, c] = max(x[r, c] + bias[c], 0) for x of shape [rows, cols], bias of shape [cols]",
        )
        return report
    op = load_op(ops, "ex3_bias_relu", report)
    if op is None:
        return report
    shapes = [(1, 1), (3, 5), (7, 1000), (1025, 33), (33, 1025), (40, 60)]
    for dev in devices():
        failure = None
        for rows, cols in shapes:
            gen = torch.Generator().manual_seed(rows * cols)
            if (rows, cols) == (40, 60):
                x = torch.randn(cols, rows, generator=gen).to(dev).t()  # a transposed view: not contiguous
            else:
                x = torch.randn(rows, cols, generator=gen).to(dev)
            bias = torch.randn(cols, generator=gen).to(dev)
            m = first_mismatch(torch.relu(x + bias), op(x, bias))
            if m and failure is None:
                failure = (tuple(x.shape), x.is_contiguous(), m)
        if failure:
            shape, contig, (i, e, got) = failure
            report.add(
                f"matches relu(x + bias) on {dev}",
                False,
                f"smallest failing shape {shape}"
                f"{'' if contig else ' (a transposed, non-contiguous x)'}: element {i} should be {e:.6g}, got {got:.6g}",
                "right on contiguous x, wrong on a transposed view: the kernel reads x's memory as if it were "
                "contiguous"
                if not contig
                else "which element of bias belongs to element (r, c) of x, and where does that element of x lie "
                "in memory?",
            )
        else:
            report.add(f"matches relu(x + bias) on {dev}", True, f"{len(shapes)} shapes, a non-contiguous one too")
        r = run_isolated(
            BAD_INPUTS.format(
                ops=child_ops_source(ops, "ex3_bias_relu"),
                dev=dev,
                sync="torch.cuda.synchronize()" if dev == "cuda" else "pass",
            )
        )
        ok = r.result is not None and "accepted" not in r.result
        report.add(
            f"clear errors on bad input on {dev} (wrong bias length, 1-D x, integer tensors)",
            ok,
            "" if ok else (f"accepted: {r.result}" if r.result else r.verdict),
            "TORCH_CHECK each argument in the binding, naming it: shape of bias, x.dim() == 2, dtype",
        )
    return report
