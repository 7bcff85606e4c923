"""bias_relu (exercise 5, solution): relu(x + bias), bias broadcast along the rows of a 2-D x."""
import torch

SCHEMAS = ["bias_relu(Tensor x, Tensor bias) -> Tensor"]


def register(lib):
    torch.library.register_fake("labkit::bias_relu", lib=lib)(lambda x, bias: x.new_empty(x.shape))


def bias_relu(x, bias):
    """relu(x + bias) for x of shape [rows, cols] and bias of shape [cols], in one pass."""
    return torch.ops.labkit.bias_relu(x, bias)
