"""Exercise 5: the seed's unguarded launch. Edit ex5_cuda_impl in ex5_device_guard.cpp; grade with
kit.grade.check("ex5_device_guard") (its checks need a GPU; the device check runs best on two)."""

import torch

SCHEMAS = ["ex5_device_guard(Tensor a, Tensor b) -> Tensor"]


def register(lib):
    torch.library.register_fake("labkit::ex5_device_guard", lib=lib)(lambda a, b: a.new_empty(a.shape))


def ex5_device_guard(a, b):
    """a + b (float32), launched by your binding."""
    return torch.ops.labkit.ex5_device_guard(a, b)
