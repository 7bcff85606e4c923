"""ex3_bias_relu (exercise 3, solution): relu(x + bias), bias broadcast along the rows of a 2-D x."""

import torch

SCHEMAS = ["ex3_bias_relu(Tensor x, Tensor bias) -> Tensor"]


def register(lib):
    torch.library.register_fake("labkit::ex3_bias_relu", lib=lib)(lambda x, bias: x.new_empty(x.shape))


def ex3_bias_relu(x, bias):
    """relu(x + bias) for x of shape [rows, cols] and bias of shape [cols], in one pass."""
    return torch.ops.labkit.ex3_bias_relu(x, bias)
