"""elu: y = x if x > 0 else alpha * (exp(x) - 1), elementwise, and its gradient. The op's Python face: its
schemas, how PyTorch's compiler and autograd see it, and the friendly call `ops.elu`. The kernels are in elu.cu
(GPU) and elu_cpu.cpp (CPU); elu.cpp binds them.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `elu` whenever
this file changes. The gradients are registered in C++, in elu.cpp: no Python runs in the op's dispatch path.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

SCHEMAS = [
    # `float alpha`: the dispatcher itself refuses an alpha that is not a number, naming the argument
    "elu(Tensor x, float alpha=1.0) -> Tensor",
    "elu_backward(Tensor grad_out, Tensor x, float alpha) -> Tensor",
    "elu_seed(Tensor x) -> Tensor",
    "elu_seed_smem(Tensor x) -> Tensor",
]

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
VERSIONS = {"fast": None, "seed": "elu_seed", "seed_smem": "elu_seed_smem"}


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors). The gradients are in C++ (elu.cpp)."""
    for name in ("labkit::elu", "labkit::elu_seed", "labkit::elu_seed_smem"):
        torch.library.register_fake(name, lib=lib)(_elu_fake)
    torch.library.register_fake("labkit::elu_backward", lib=lib)(_elu_backward_fake)


def _check_float(op, name, t):
    torch._check(
        t.dtype in FLOAT_DTYPES,
        lambda: (
            f"{op}: {name} must be a floating-point tensor (float32, float64, float16 or bfloat16), but got {t.dtype}"
        ),
    )


def _elu_fake(x, alpha=1.0):
    _check_float("elu", "x", x)
    return x.new_empty(x.shape)


def _elu_backward_fake(grad_out, x, alpha):
    _check_float("elu_backward", "x", x)
    torch._check(
        grad_out.shape == x.shape,
        lambda: f"elu_backward: grad_out and x must have the same shape, got {grad_out.shape} and {x.shape}",
    )
    return x.new_empty(x.shape)


def elu(x, alpha=1.0, *, version="fast"):
    """ELU from our kernels: x where x > 0, alpha * (exp(x) - 1) elsewhere; differentiable. version="seed" and
    "seed_smem" run the two kernels of the ELU tutorial notebook 02 starts from (CUDA, float32, alpha 1), for
    comparison."""
    if version == "fast":
        return labkit.elu.default(x, alpha)
    if version not in VERSIONS:
        raise ValueError(f"elu: version must be one of {', '.join(map(repr, VERSIONS))}, got {version!r}")
    if alpha != 1.0:
        raise ValueError(
            f"elu: version={version!r} is the tutorial's kernel, whose alpha is fixed at 1.0 "
            f"(#define ALPHA), but alpha={alpha!r}"
        )
    return getattr(labkit, VERSIONS[version])(x)
