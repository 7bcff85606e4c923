"""deform_conv2d: deformable convolution (DCNv1, and DCNv2 with a mask), as torchvision.ops.deform_conv2d computes it:
a convolution whose taps read the input at learnt fractional offsets from the grid, by bilinear interpolation, each
sample scaled by a learnt mask. The op's Python face: its schemas, how PyTorch's compiler sees it, and the friendly
call `ops.deform_conv2d`. The sampling kernels are in deform_conv2d_cpu.cpp (CPU) and deform_conv2d.cu (GPU);
deform_conv2d.cpp binds them, does the matmuls, and holds the gradient, in C++. On the GPU its 16-bit matmuls are
the kit's own, labkit::matmul, called through the dispatcher: USES has the loader load ops.matmul first.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `deform_conv2d`
whenever this file changes.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

USES = ["matmul"]  # ops whose kernels the binding calls (through the dispatcher): loaded before this one

SCHEMAS = [
    # the groups are read off the shapes, as torchvision's Python call does: weight_groups = C_in / weight.shape[1],
    # offset_groups = offset.shape[1] / (2 * kernel_h * kernel_w); no mask: DCNv1, every sample counts once
    "deform_conv2d(Tensor input, Tensor offset, Tensor weight, Tensor? bias, Tensor? mask, int stride_h, "
    "int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w) -> Tensor",
    # (grad_input, grad_offset, grad_mask, grad_weight, grad_bias); grad_mask is empty, shape (0,), without a mask
    "deform_conv2d_backward(Tensor grad_out, Tensor input, Tensor offset, Tensor weight, Tensor? mask, int stride_h, "
    "int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
]

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# dtypes as the binding's messages name them (c10's ScalarType names), so that both say the same
SCALAR_TYPE_NAMES = {
    torch.float32: "Float",
    torch.float64: "Double",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
}


def _name(dtype):
    return SCALAR_TYPE_NAMES.get(dtype, str(dtype))


def register(lib):
    """Teach PyTorch's compiler the ops' output shapes (fake tensors). The gradient is in C++ (deform_conv2d.cpp)."""
    torch.library.register_fake("labkit::deform_conv2d", lib=lib)(_deform_conv2d_fake)
    torch.library.register_fake("labkit::deform_conv2d_backward", lib=lib)(_deform_conv2d_backward_fake)


def _same_device_and_dtype(op, first, first_name, t, name):
    """first and t on one device with one dtype, as the binding checks them (its messages)."""
    torch._check(
        first.device == t.device,
        lambda: (
            f"{op}: {first_name} and {name} must be on the same device, but {first_name} is on {first.device} and "
            f"{name} is on {t.device}"
        ),
    )
    torch._check_type(
        first.dtype == t.dtype,
        lambda: (
            f"{op}: {first_name} and {name} must have the same dtype, but {first_name} is {_name(first.dtype)} and "
            f"{name} is {_name(t.dtype)}"
        ),
    )


def _dims(op, name, t, dims, layout):
    torch._check_value(
        t.dim() == dims, lambda: f"{op}: {name} must be {dims}-D {layout}, but has shape {list(t.shape)}"
    )


def _check(op, input, offset, weight, bias, mask, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w):
    """The binding's checks (deform_conv2d.cpp, check_inputs) with its messages, in its order; returns the output's
    (N, C_out, out_h, out_w)."""
    torch._check_type(
        input.dtype in FLOAT_DTYPES,
        lambda: (
            f"{op}: input must be a floating-point tensor (float32, float64, float16 or bfloat16), but got "
            f"{_name(input.dtype)}"
        ),
    )
    _same_device_and_dtype(op, input, "input", offset, "offset")
    _same_device_and_dtype(op, input, "input", weight, "weight")
    if bias is not None:
        _same_device_and_dtype(op, input, "input", bias, "bias")
    if mask is not None:
        _same_device_and_dtype(op, input, "input", mask, "mask")
    _dims(op, "input", input, 4, "(N, C_in, H, W)")
    _dims(op, "weight", weight, 4, "(C_out, C_in / weight_groups, kernel_h, kernel_w)")
    _dims(op, "offset", offset, 4, "(N, 2 * offset_groups * kernel_h * kernel_w, out_h, out_w)")
    if mask is not None:
        _dims(op, "mask", mask, 4, "(N, offset_groups * kernel_h * kernel_w, out_h, out_w)")
    if bias is not None:
        _dims(op, "bias", bias, 1, "(C_out,)")
    torch._check_value(
        stride_h > 0 and stride_w > 0, lambda: f"{op}: stride must be positive, but is ({stride_h}, {stride_w})"
    )
    torch._check_value(
        pad_h >= 0 and pad_w >= 0, lambda: f"{op}: padding must not be negative, but is ({pad_h}, {pad_w})"
    )
    torch._check_value(
        dilation_h > 0 and dilation_w > 0,
        lambda: f"{op}: dilation must be positive, but is ({dilation_h}, {dilation_w})",
    )

    n, in_channels, height, width = input.shape
    out_channels, per_group, kernel_h, kernel_w = weight.shape
    torch._check_value(
        in_channels > 0, lambda: f"{op}: input must have at least one channel, but has shape {list(input.shape)}"
    )
    torch._check_value(
        kernel_h > 0 and kernel_w > 0,
        lambda: f"{op}: the kernel must be at least 1 x 1, but weight has shape {list(weight.shape)}",
    )
    torch._check_value(
        per_group > 0 and in_channels % per_group == 0,
        lambda: (
            f"{op}: weight.shape[1] (input channels per weight group) must divide input's C_in = {in_channels}, but "
            f"weight has shape {list(weight.shape)}"
        ),
    )
    weight_groups = in_channels // per_group
    torch._check_value(
        out_channels % weight_groups == 0,
        lambda: (
            f"{op}: weight's C_out = {out_channels} must be a multiple of the weight groups, C_in / weight.shape[1] "
            f"= {weight_groups}"
        ),
    )
    taps = kernel_h * kernel_w
    torch._check_value(
        offset.shape[1] > 0 and offset.shape[1] % (2 * taps) == 0,
        lambda: (
            f"{op}: offset.shape[1] must be a positive multiple of 2 * kernel_h * kernel_w = {2 * taps} (a dy and a "
            f"dx per tap and offset group), but offset has shape {list(offset.shape)}"
        ),
    )
    offset_groups = offset.shape[1] // (2 * taps)
    torch._check_value(
        in_channels % offset_groups == 0,
        lambda: (
            f"{op}: the offset groups, offset.shape[1] / (2 * kernel_h * kernel_w) = {offset_groups}, must divide "
            f"input's C_in = {in_channels}"
        ),
    )
    reach_h, reach_w = dilation_h * (kernel_h - 1) + 1, dilation_w * (kernel_w - 1) + 1
    torch._check_value(
        height + 2 * pad_h >= reach_h and width + 2 * pad_w >= reach_w,
        lambda: (
            f"{op}: the output would be empty: the padded input is {height + 2 * pad_h} x {width + 2 * pad_w} but the "
            f"dilated kernel spans {reach_h} x {reach_w}"
        ),
    )
    torch._check_value(
        input.device.type != "cuda" or in_channels // offset_groups <= 65535 * 8,
        lambda: (
            f"{op}: on the GPU an offset group holds at most 524280 input channels, but has "
            f"{in_channels // offset_groups}"
        ),
    )
    out_h = (height + 2 * pad_h - reach_h) // stride_h + 1
    out_w = (width + 2 * pad_w - reach_w) // stride_w + 1
    torch._check_value(
        offset.shape[0] == n and offset.shape[2] == out_h and offset.shape[3] == out_w,
        lambda: (
            f"{op}: offset must have shape (N, 2 * offset_groups * kernel_h * kernel_w, out_h, out_w) = ({n}, "
            f"{offset.shape[1]}, {out_h}, {out_w}), but has shape {list(offset.shape)}"
        ),
    )
    if mask is not None:
        torch._check_value(
            tuple(mask.shape) == (n, offset_groups * taps, out_h, out_w),
            lambda: (
                f"{op}: mask must have shape (N, offset_groups * kernel_h * kernel_w, out_h, out_w) = ({n}, "
                f"{offset_groups * taps}, {out_h}, {out_w}), but has shape {list(mask.shape)}"
            ),
        )
    if bias is not None:
        torch._check_value(
            bias.shape[0] == out_channels,
            lambda: f"{op}: bias must have shape (C_out,) = ({out_channels},), but has shape {list(bias.shape)}",
        )
    return n, out_channels, out_h, out_w


def _deform_conv2d_fake(input, offset, weight, bias, mask, *args):
    return input.new_empty(_check("deform_conv2d", input, offset, weight, bias, mask, *args))


def _deform_conv2d_backward_fake(grad_out, input, offset, weight, mask, *args):
    op = "deform_conv2d_backward"
    shape = _check(op, input, offset, weight, None, mask, *args)
    _same_device_and_dtype(op, grad_out, "grad_out", input, "input")
    torch._check_value(
        tuple(grad_out.shape) == tuple(shape),
        lambda: (
            f"{op}: grad_out must have the output's shape (N, C_out, out_h, out_w) = ({', '.join(map(str, shape))}), "
            f"but has shape {list(grad_out.shape)}"
        ),
    )
    return (
        input.new_empty(input.shape),
        offset.new_empty(offset.shape),
        input.new_empty(mask.shape if mask is not None else (0,)),
        weight.new_empty(weight.shape),
        weight.new_empty((weight.shape[0],)),
    )


def _pair(name, value):
    """An int, or a pair of ints (height, width), as torchvision takes stride, padding and dilation."""
    if isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool):
        return value, value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1]
    raise ValueError(f"deform_conv2d: {name} must be an int or a pair of ints (height, width), but is {value!r}")


def deform_conv2d(input, offset, weight, bias=None, stride=1, padding=0, dilation=1, mask=None):
    """Deformable convolution from our kernels, with torchvision.ops.deform_conv2d's arguments and results;
    differentiable in input, offset, weight, bias and mask (first derivatives).

    input (N, C_in, H, W); weight (C_out, C_in / weight_groups, kernel_h, kernel_w); offset (N, 2 * offset_groups *
    kernel_h * kernel_w, out_h, out_w), for each tap (row-major) its dy then dx; mask (N, offset_groups * kernel_h *
    kernel_w, out_h, out_w) or None (DCNv1); bias (C_out) or None. stride, padding, dilation: an int or a pair
    (height, width). Returns (N, C_out, out_h, out_w). A sample a pixel or more outside the input reads 0, and each
    pixel outside counts as 0 (zero padding)."""
    stride_h, stride_w = _pair("stride", stride)
    pad_h, pad_w = _pair("padding", padding)
    dilation_h, dilation_w = _pair("dilation", dilation)
    return labkit.deform_conv2d.default(
        input, offset, weight, bias, mask, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w
    )
