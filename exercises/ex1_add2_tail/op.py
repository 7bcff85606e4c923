"""Exercise 1: add2 for any size. Edit add2_tail_thread in ex1_add2_tail.h; grade with kit.grade.check("ex1_add2_tail")."""

import torch

SCHEMAS = ["ex1_add2_tail(Tensor a, Tensor b, Tensor(a!) out) -> ()"]


def register(lib):
    torch.library.register_fake("labkit::ex1_add2_tail", lib=lib)(lambda a, b, out: None)


def ex1_add2_tail(a, b, *, out=None):
    """a + b (float32) by your kernel, into out (a new tensor if None)."""
    out = torch.empty_like(a, memory_format=torch.contiguous_format) if out is None else out
    torch.ops.labkit.ex1_add2_tail(a, b, out)
    return out
