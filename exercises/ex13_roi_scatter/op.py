"""Exercise 13: RoIAlign's backward, the scatter. Edit scatter_sample in ex13_roi_scatter.h; grade with
kit.grade.check("ex13_roi_scatter"). The forward is given; autograd calls the backward, which calls your scatter."""

import torch

SCHEMAS = [
    "ex13_roi_scatter(Tensor input, Tensor boxes, float spatial_scale, int pooled_height, int pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "ex13_roi_scatter_backward(Tensor grad_out, Tensor boxes, float spatial_scale, int pooled_height, "
    "int pooled_width, int sampling_ratio, bool aligned, Tensor(a!) grad_input) -> ()",
]


def register(lib):
    """Shapes for torch.compile; the gradient is registered in C++ (ex13_roi_scatter.cpp)."""
    torch.library.register_fake("labkit::ex13_roi_scatter", lib=lib)(
        lambda input, boxes, scale, ph, pw, sampling_ratio, aligned: input.new_empty(
            (boxes.shape[0], input.shape[1], ph, pw)
        )
    )
    torch.library.register_fake("labkit::ex13_roi_scatter_backward", lib=lib)(lambda *args: None)


def _sizes(output_size):
    return (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)


def ex13_roi_scatter(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """torchvision.ops.roi_align(input, boxes, ...) by the given forward (float32 or float64); its gradient
    (input.requires_grad) comes from the given backward with your scatter."""
    ph, pw = _sizes(output_size)
    return torch.ops.labkit.ex13_roi_scatter(
        input, boxes, float(spatial_scale), int(ph), int(pw), int(sampling_ratio), bool(aligned)
    )
