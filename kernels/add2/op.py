"""add2: c = a + b, elementwise. The op's Python face: its schemas, how PyTorch's compiler sees it, and
the friendly call `ops.add2`. The kernels are in add2.cu (GPU) and add2_cpu.cpp (CPU); add2.cpp binds them.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `add2`
whenever this file changes.
"""
import torch

SCHEMAS = [
    "add2(Tensor a, Tensor b) -> Tensor",
    "add2_out(Tensor a, Tensor b, Tensor(a!) out) -> ()",
    "add2_seed(Tensor a, Tensor b) -> Tensor",
]


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors) and add2's gradient."""
    for name in ("labkit::add2", "labkit::add2_seed"):
        torch.library.register_fake(name, lib=lib)(_add2_fake)
    torch.library.register_fake("labkit::add2_out", lib=lib)(lambda a, b, out: None)
    # d(a + b)/da = d(a + b)/db = 1, so both gradients are the incoming one
    torch.library.register_autograd("labkit::add2", lambda ctx, grad: (grad, grad), lib=lib)


def _add2_fake(a, b):
    torch._check(a.shape == b.shape, lambda: f"add2: a and b must have the same shape, got {a.shape} and {b.shape}")
    return a.new_empty(a.shape)


def add2(a, b, *, out=None, version="fast"):
    """a + b from our kernel. out= writes into an existing tensor; version="seed" runs the seed tutorial's
    kernel (CUDA, float32) for comparison."""
    if version == "seed":
        if out is not None:
            raise ValueError('add2: out= is not supported with version="seed"')
        return torch.ops.labkit.add2_seed(a, b)
    if version != "fast":
        raise ValueError(f'add2: version must be "fast" or "seed", got {version!r}')
    if out is None:
        return torch.ops.labkit.add2(a, b)
    torch.ops.labkit.add2_out(a, b, out)
    return out
