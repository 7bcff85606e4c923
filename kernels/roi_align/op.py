"""roi_align: RoIAlign (Mask R-CNN), as torchvision.ops.roi_align computes it: for each box, a C x PH x PW crop of the
feature map, each bin the average of bilinear samples. The op's Python face: its schemas, how PyTorch's compiler sees
it, and the friendly call `ops.roi_align`. The kernels are in roi_align.cu (GPU: one forward, two backwards) and
roi_align_cpu.cpp (CPU); roi_align.cpp binds them and holds the gradient, in C++.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `roi_align` whenever
this file changes.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

SCHEMAS = [
    # backward_version: which backward kernel the gradient runs (1 atomic, 2 channels-last); the forward ignores it
    "roi_align(Tensor input, Tensor boxes, float spatial_scale, int pooled_height, int pooled_width, "
    "int sampling_ratio, bool aligned, int backward_version=1) -> Tensor",
    "roi_align_backward(Tensor grad_out, Tensor boxes, float spatial_scale, int pooled_height, int pooled_width, "
    "int batch_size, int channels, int height, int width, int sampling_ratio, bool aligned, int version=1) -> Tensor",
]

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# the backward's versions (roi_align.cu), by name; "fast" is FAST: "channels_last", 3.4x "atomic" in float32 and 3.0x
# in float16 on an H200 (make bench, 2026-12-02: 1000 boxes of 7 x 7 bins over 2 x 256 x 200 x 272)
VERSIONS = {"atomic": 1, "channels_last": 2}
FAST = "channels_last"


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors). The gradient is in C++ (roi_align.cpp)."""
    torch.library.register_fake("labkit::roi_align", lib=lib)(_roi_align_fake)
    torch.library.register_fake("labkit::roi_align_backward", lib=lib)(_roi_align_backward_fake)


def _check(op, name, data, boxes, pooled_height, pooled_width, sampling_ratio):
    """The binding's checks (roi_align.cpp) that the shapes alone decide, with its messages."""
    torch._check(
        data.dtype in FLOAT_DTYPES,
        lambda: (
            f"{op}: {name} must be a floating-point tensor (float32, float64, float16 or bfloat16), "
            f"but got {data.dtype}"
        ),
    )
    torch._check(
        data.device == boxes.device,
        lambda: (
            f"{op}: {name} and boxes must be on the same device, but {name} is on {data.device} and boxes is on "
            f"{boxes.device}"
        ),
    )
    torch._check(
        data.dtype == boxes.dtype,
        lambda: (
            f"{op}: {name} and boxes must have the same dtype, but {name} is {data.dtype} and boxes is {boxes.dtype}"
        ),
    )
    torch._check(
        boxes.dim() == 2 and boxes.shape[1] == 5,
        lambda: (
            f"{op}: boxes must have shape (K, 5), each row (batch index, x1, y1, x2, y2), but has shape "
            f"{list(boxes.shape)}"
        ),
    )
    torch._check(
        pooled_height > 0 and pooled_width > 0,
        lambda: f"{op}: output_size must be positive, but is ({pooled_height}, {pooled_width})",
    )
    torch._check(
        sampling_ratio >= 0 or sampling_ratio == -1,
        lambda: f"{op}: sampling_ratio must be -1, 0 or positive, but is {sampling_ratio}",
    )


def _roi_align_fake(
    input, boxes, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned, backward_version=1
):
    _check("roi_align", "input", input, boxes, pooled_height, pooled_width, sampling_ratio)
    torch._check(
        input.dim() == 4, lambda: f"roi_align: input must be 4-D (N, C, H, W), but has shape {list(input.shape)}"
    )
    return input.new_empty((boxes.shape[0], input.shape[1], pooled_height, pooled_width))


def _roi_align_backward_fake(
    grad_out,
    boxes,
    spatial_scale,
    pooled_height,
    pooled_width,
    batch_size,
    channels,
    height,
    width,
    sampling_ratio,
    aligned,
    version=1,
):
    _check("roi_align_backward", "grad_out", grad_out, boxes, pooled_height, pooled_width, sampling_ratio)
    if version == VERSIONS["channels_last"]:  # summed as (N, H, W, C): the gradient has channels-last strides
        return grad_out.new_empty((batch_size, height, width, channels)).permute(0, 3, 1, 2)
    return grad_out.new_empty((batch_size, channels, height, width))


def _boxes_to_rois(boxes, input):
    """A list of (Ki, 4) tensors, one per image, as one (K, 5) tensor whose first column is the image's index (what
    torchvision's convert_boxes_to_roi_format does)."""
    for i, b in enumerate(boxes):
        if not isinstance(b, torch.Tensor) or b.dim() != 2 or b.shape[1] != 4:
            shape = list(b.shape) if isinstance(b, torch.Tensor) else type(b).__name__
            raise ValueError(f"roi_align: boxes[{i}] must be a (Ki, 4) tensor (x1, y1, x2, y2), but is {shape}")
    if not boxes:
        return input.new_empty((0, 5))
    index = torch.cat([torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)])
    return torch.cat([index, torch.cat(list(boxes))], dim=1)


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False, *, version="fast"):
    """RoIAlign from our kernels, with torchvision.ops.roi_align's arguments and results; differentiable in input.
    input (N, C, H, W); boxes (K, 5) rows (batch index, x1, y1, x2, y2), or a list of N (Ki, 4) tensors; output_size
    an int or (height, width). Returns (K, C, height, width). On the GPU a channels-last input is read in place.
    On the CPU a batch index outside [0, N) is an error; on the GPU (where checking would cost a copy to the host
    and a wait) that box gives zeros and no gradient. version= picks the backward kernel: "atomic" (torchvision's
    scatter) or "channels_last" (its gradient comes back with channels-last strides); "fast" is the faster one."""
    if version == "fast":
        version = FAST
    if version not in VERSIONS:
        raise ValueError(
            f'roi_align: version must be "fast" or one of {", ".join(map(repr, VERSIONS))}, got {version!r}'
        )
    if isinstance(boxes, (list, tuple)):
        boxes = _boxes_to_rois(boxes, input)
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    height, width = output_size
    return labkit.roi_align.default(
        input,
        boxes,
        float(spatial_scale),
        int(height),
        int(width),
        int(sampling_ratio),
        bool(aligned),
        VERSIONS[version],
    )
