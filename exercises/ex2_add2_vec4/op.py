"""Exercise 2: add2 with f4 loads and a tail. Edit add2_vec4_thread in ex2_add2_vec4.h; grade with
kit.grade.check("ex2_add2_vec4")."""

import torch

SCHEMAS = ["ex2_add2_vec4(Tensor a, Tensor b, Tensor(a!) out) -> ()"]


def register(lib):
    torch.library.register_fake("labkit::ex2_add2_vec4", lib=lib)(lambda a, b, out: None)


def ex2_add2_vec4(a, b, *, out=None):
    """a + b (float32, contiguous, 16-byte aligned) by your kernel, into out (a new tensor if None)."""
    out = torch.empty_like(a, memory_format=torch.contiguous_format) if out is None else out
    torch.ops.labkit.ex2_add2_vec4(a, b, out)
    return out
