"""Exercise 7: the sum of a warp's values by shuffles. Edit warp_sum in ex7_warp_sum.h; grade with
kit.grade.check("ex7_warp_sum")."""

import torch

SCHEMAS = ["ex7_warp_sum(Tensor x) -> Tensor"]


def register(lib):
    torch.library.register_fake("labkit::ex7_warp_sum", lib=lib)(lambda x: x.new_empty(()))


def ex7_warp_sum(x):
    """The sum of x's elements (float32, 1-D) by your warp_sum: a 0-d tensor."""
    return torch.ops.labkit.ex7_warp_sum(x)
