"""matmul: C = A @ B for 2-D a (M x K) and b (K x N). The op's Python face: its schemas, how PyTorch's compiler sees
it, and the friendly call `ops.matmul`. The kernels are in matmul.cu (GPU: the lesson's nine versions, and split-K),
matmul_hopper.cu (GPU: five more on Hopper's tensor cores, and split-K's 16-bit kernel) and matmul_cpu.cpp (CPU);
matmul.cpp binds them and holds the gradient, in C++.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `matmul` whenever
this file changes.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

SCHEMAS = [
    "matmul(Tensor a, Tensor b) -> Tensor",
    "matmul_version(Tensor a, Tensor b, int version) -> Tensor",
    "matmul_choice(Tensor a, Tensor b) -> int",
    "matmul_splits(Tensor a, Tensor b) -> int",
]

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# the lesson's versions (matmul.cu), by name, simplest first; "fast" is the op itself
VERSIONS = {
    "naive": 1,
    "coalesced": 2,
    "smem": 3,
    "reg1d": 4,
    "reg2d": 5,
    "vec": 6,
    "wmma": 7,
    "wgmma": 8,
    "warpspec": 9,
    "wide": 10,
    "persistent": 11,
    "tall": 12,
    "warptile": 13,
    "pipelined": 14,
    "splitk": 15,
}
_NAMES = {0: "cpu", **{number: name for name, number in VERSIONS.items()}}


# matmul_hopper.cu's wgmma and setmaxnreg exist for sm_90a only: where TORCH_CUDA_ARCH_LIST is unset, the loader then
# builds this op for each present GPU's own target, sm_90a for Hopper (building.environment.arch_specific_targets)
ARCH_SPECIFIC = True


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors). The gradient is in C++ (matmul.cpp)."""
    torch.library.register_fake("labkit::matmul", lib=lib)(_matmul_fake)
    torch.library.register_fake("labkit::matmul_version", lib=lib)(lambda a, b, version: _matmul_fake(a, b))


def _matmul_fake(a, b):
    """The binding's checks (matmul.cpp, check_inputs), with its messages, and the output's shape."""
    _check_float("a", a)
    _check_float("b", b)
    torch._check(
        a.device == b.device,
        lambda: f"matmul: a and b must be on the same device, but a is on {a.device} and b is on {b.device}",
    )
    torch._check(
        a.dtype == b.dtype, lambda: f"matmul: a and b must have the same dtype, but a is {a.dtype} and b is {b.dtype}"
    )
    torch._check(
        a.dim() == 2 and b.dim() == 2,
        lambda: (
            f"matmul: a and b must be 2-D matrices, but a has shape {list(a.shape)} and b has shape {list(b.shape)}"
        ),
    )
    torch._check(
        a.shape[1] == b.shape[0],
        lambda: (
            f"matmul: a's columns must match b's rows (a is M x K, b is "
            f"K x N), but a has shape {list(a.shape)} and b has shape "
            f"{list(b.shape)}"
        ),
    )
    return a.new_empty((a.shape[0], b.shape[1]))


def _check_float(name, t):
    torch._check(
        t.dtype in FLOAT_DTYPES,
        lambda: (
            f"matmul: {name} must be a floating-point tensor (float32, float64, float16 or bfloat16), but got {t.dtype}"
        ),
    )


def matmul(a, b, *, version="fast", which=False, splits=False):
    """C = a @ b for matrices a (M x K) and b (K x N), from our kernels; differentiable. Accumulated in float32
    (float64 for float64), returned in the inputs' dtype. version= runs one of the lesson's GPU kernels instead:
    "naive", "coalesced", "smem", "reg1d", "reg2d", "vec", "warptile" or "pipelined" (float32), "wmma" (float16,
    bfloat16: tensor cores), on a Hopper GPU "wgmma", "warpspec", "wide", "persistent" or "tall" (float16, bfloat16),
    or "splitk" (float32, and on a Hopper GPU float16 and bfloat16: K cut into ranges over more blocks where the output
    has too few tiles).
    which=True computes nothing and returns the name of the version that version="fast" runs for a and b ("cpu" for
    CPU tensors); splits=True computes nothing and returns how many ranges of k it cuts the product into (1: none)."""
    if which:
        return _NAMES[labkit.matmul_choice.default(a, b)]
    if splits:
        return labkit.matmul_splits.default(a, b)
    if version == "fast":
        return labkit.matmul.default(a, b)
    if version not in VERSIONS:
        raise ValueError(f'matmul: version must be "fast" or one of {", ".join(map(repr, VERSIONS))}, got {version!r}')
    return labkit.matmul_version.default(a, b, VERSIONS[version])
