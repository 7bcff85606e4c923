"""Exercise 12: RoIAlign's bilinear sample. Edit bilinear in ex12_bilinear_sample.h; grade with
kit.grade.check("ex12_bilinear_sample"). The rest of RoIAlign's forward is given and calls your sample."""

import torch

SCHEMAS = [
    "ex12_bilinear_sample(Tensor input, Tensor boxes, float spatial_scale, int pooled_height, int pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor"
]


def register(lib):
    torch.library.register_fake("labkit::ex12_bilinear_sample", lib=lib)(
        lambda input, boxes, scale, ph, pw, sampling_ratio, aligned: input.new_empty(
            (boxes.shape[0], input.shape[1], ph, pw)
        )
    )


def ex12_bilinear_sample(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """torchvision.ops.roi_align(input, boxes, ...) by the given forward and your bilinear sample: input (N, C, H, W)
    float32 or float64, boxes (K, 5) rows (batch index, x1, y1, x2, y2) of the same dtype; returns (K, C, PH, PW)."""
    ph, pw = (output_size, output_size) if isinstance(output_size, int) else output_size
    return torch.ops.labkit.ex12_bilinear_sample(
        input, boxes, float(spatial_scale), int(ph), int(pw), int(sampling_ratio), bool(aligned)
    )
