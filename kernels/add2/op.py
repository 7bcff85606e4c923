"""add2: c = a + b, elementwise. The op's Python face: its schemas, how PyTorch's compiler sees it, and
the friendly call `ops.add2`. The kernels are in add2.cu (GPU) and add2_cpu.cpp (CPU); add2.cpp binds them.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `add2`
whenever this file changes. The gradient is registered in C++, in add2.cpp: no Python in the op's dispatch path.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

SCHEMAS = [
    "add2(Tensor a, Tensor b) -> Tensor",
    "add2_out(Tensor a, Tensor b, Tensor(a!) out) -> ()",
    "add2_seed(Tensor a, Tensor b) -> Tensor",
    # the multi-GPU lesson (03_multi_gpu.ipynb): a launch without a device guard, and the cudaSetDevice fix of the
    # blog post that lesson starts from
    "add2_unguarded(Tensor a, Tensor b) -> Tensor",
    "add2_set_device(Tensor a, Tensor b) -> Tensor",
]

VERSIONS = {"seed": "add2_seed", "unguarded": "add2_unguarded", "set_device": "add2_set_device"}


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors). The gradient is in C++ (add2.cpp)."""
    for name in ["labkit::add2"] + [f"labkit::{op}" for op in VERSIONS.values()]:
        torch.library.register_fake(name, lib=lib)(_add2_fake)
    torch.library.register_fake("labkit::add2_out", lib=lib)(lambda a, b, out: None)


def _add2_fake(a, b):
    torch._check(a.shape == b.shape, lambda: f"add2: a and b must have the same shape, got {a.shape} and {b.shape}")
    return a.new_empty(a.shape)


def add2(a, b, *, out=None, version="fast"):
    """a + b from our kernel. out= writes into an existing tensor. Other versions, for the lessons (CUDA only):
    version="seed" runs the kernel of the add2 tutorial notebook 01 starts from (float32); "unguarded" launches
    without a device guard (notebook 03's wrong-GPU bug); "set_device" calls cudaSetDevice in the launcher (the fix
    notebook 03's blog post made)."""
    if version == "fast":
        if out is None:
            return labkit.add2.default(a, b)
        labkit.add2_out.default(a, b, out)
        return out
    if version in VERSIONS:
        if out is not None:
            raise ValueError(f"add2: out= is not supported with version={version!r}")
        return getattr(labkit, VERSIONS[version])(a, b)
    raise ValueError(f'add2: version must be "fast", {", ".join(map(repr, VERSIONS))}; got {version!r}')
