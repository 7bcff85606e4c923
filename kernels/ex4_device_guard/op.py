"""Exercise 4: the seed's unguarded launch. Edit ex4_cuda_impl in ex4_device_guard.cpp; grade with
kit.grade.check("ex4_device_guard") (its checks need a GPU; the device check runs best on two)."""
import torch

SCHEMAS = ["ex4_device_guard(Tensor a, Tensor b) -> Tensor"]


def register(lib):
    torch.library.register_fake("labkit::ex4_device_guard", lib=lib)(lambda a, b: a.new_empty(a.shape))


def ex4_device_guard(a, b):
    """a + b (float32), launched by your binding."""
    return torch.ops.labkit.ex4_device_guard(a, b)
