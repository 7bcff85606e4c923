"""Exercise 14: deformable convolution's offset sampling. Edit deform_tap in ex14_deform_sample.h; grade with
kit.grade.check("ex14_deform_sample"). The deformable im2col around it is given and calls your tap for every entry."""

import torch

SCHEMAS = [
    "ex14_deform_sample(Tensor input, Tensor offset, Tensor mask, int kernel_h, int kernel_w, int stride_h, "
    "int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w) -> Tensor"
]


def _columns_fake(input, offset, mask, kh, kw, sh, sw, ph, pw, dh, dw):
    return input.new_empty((input.shape[1] * kh * kw, input.shape[0] * offset.shape[2] * offset.shape[3]))


def register(lib):
    torch.library.register_fake("labkit::ex14_deform_sample", lib=lib)(_columns_fake)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ex14_deform_sample(input, offset, kernel_size, stride=1, padding=0, dilation=1, mask=None):
    """The columns of torchvision.ops.deform_conv2d(input, offset, weight, stride=..., padding=..., dilation=...,
    mask=...), by the given im2col and your tap: input (N, C, H, W) float32 or float64, offset (N, G * 2 * kh * kw,
    OH, OW), mask (N, G * kh * kw, OH, OW) or None (every sample counts once); returns (C * kh * kw, N * OH * OW),
    whose product with weight.view(C_out, -1) is the convolution's output, image by image."""
    kh, kw = _pair(kernel_size)
    if mask is None:
        n, _, oh, ow = offset.shape
        mask = offset.new_ones((n, offset.shape[1] // 2, oh, ow))
    return torch.ops.labkit.ex14_deform_sample(
        input, offset, mask, int(kh), int(kw), *(int(v) for v in (*_pair(stride), *_pair(padding), *_pair(dilation)))
    )
