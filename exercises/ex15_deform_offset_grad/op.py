"""Exercise 15: deformable convolution's offset gradient. Edit sample_slopes in ex15_deform_offset_grad.h; grade with
kit.grade.check("ex15_deform_offset_grad"). The gradient around it is given and calls your slopes for every sample."""

import torch

SCHEMAS = [
    "ex15_deform_offset_grad(Tensor grad_columns, Tensor input, Tensor offset, Tensor mask, int kernel_h, "
    "int kernel_w, int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w) -> Tensor"
]


def register(lib):
    torch.library.register_fake("labkit::ex15_deform_offset_grad", lib=lib)(
        lambda grad_columns, input, offset, *args: torch.empty_like(offset)
    )


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ex15_deform_offset_grad(grad_columns, input, offset, kernel_size, stride=1, padding=0, dilation=1, mask=None):
    """The gradient of the offsets of torchvision.ops.deform_conv2d(input, offset, weight, stride=..., padding=...,
    dilation=..., mask=...), by the given sum and your slopes: grad_columns (C * kh * kw, N * OH * OW) is the gradient
    of exercise 14's columns (weight.view(C_out, -1).T @ grad_out, image by image), input (N, C, H, W) float32 or
    float64, offset (N, G * 2 * kh * kw, OH, OW), mask (N, G * kh * kw, OH, OW) or None (every sample counts once);
    returns a tensor of offset's shape."""
    kh, kw = _pair(kernel_size)
    if mask is None:
        n, _, oh, ow = offset.shape
        mask = offset.new_ones((n, offset.shape[1] // 2, oh, ow))
    return torch.ops.labkit.ex15_deform_offset_grad(
        grad_columns,
        input,
        offset,
        mask,
        int(kh),
        int(kw),
        *(int(v) for v in (*_pair(stride), *_pair(padding), *_pair(dilation))),
    )
