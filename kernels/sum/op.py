"""sum: the sum of every element of x, or of each row (dim=-1: the last dimension). The op's Python face: its
schemas, how PyTorch's compiler sees it, and the friendly call `ops.sum`. The kernels are in sum.cu (GPU, with the
lesson's five versions) and sum_cpu.cpp (CPU); sum.cpp binds them and holds the gradient, in C++.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `sum` whenever this
file changes.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

SCHEMAS = [
    "sum(Tensor x, int? dim=None) -> Tensor",
    "sum_version(Tensor x, int version) -> Tensor",
]

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# the lesson's versions (sum.cu), by name; "fast" (version 5) is the op itself
VERSIONS = {"atomic": 1, "interleaved": 2, "sequential": 3, "warp": 4}


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors). The gradient is in C++ (sum.cpp)."""
    torch.library.register_fake("labkit::sum", lib=lib)(_sum_fake)
    torch.library.register_fake("labkit::sum_version", lib=lib)(lambda x, version: x.new_empty(()))


def _sum_fake(x, dim=None):
    torch._check(
        x.dtype in FLOAT_DTYPES,
        lambda: f"sum: x must be a floating-point tensor (float32, float64, float16 or bfloat16), but got {x.dtype}",
    )
    if dim is None or x.dim() == 0:
        return x.new_empty(())
    return x.new_empty(x.shape[:-1])


def sum(x, dim=None, *, version="fast"):  # noqa: A001 (ops.sum, as torch.sum)
    """The sum of every element of x (dim=None), or of each row (dim=-1), from our kernels; differentiable.
    Accumulated in float32 (float64 for float64), returned in x's dtype. version="atomic", "interleaved",
    "sequential" or "warp" runs one of the lesson's simpler GPU kernels (float32, every element) instead."""
    if version == "fast":
        return labkit.sum.default(x, dim)
    if version not in VERSIONS:
        raise ValueError(f'sum: version must be "fast" or one of {", ".join(map(repr, VERSIONS))}, got {version!r}')
    if dim is not None:
        raise ValueError(f"sum: version={version!r} sums every element; dim must be None, got {dim!r}")
    return labkit.sum_version.default(x, VERSIONS[version])
