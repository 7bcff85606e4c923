"""ops.deform_conv2d against torchvision.ops.deform_conv2d (the reference) on the CPU: the output and all five
gradients (input, offset, mask, weight, bias) in float32 and float64 over strides, paddings, dilations, non-square
kernels, weight groups and offset groups of 1 and 2, with and without a mask and a bias, offsets that carry samples
off the map, and samples placed exactly on the map's edges and on whole pixels (where the offset's gradient jumps);
float16 and bfloat16 against torchvision in float64 on the same values; a batch cut into chunks; gradcheck,
opcheck, torch.compile, empty inputs, bad input (the fake kernels' messages too). On the GPU (the `device` fixture:
cpu, and cuda where there is one) the same against torchvision's CUDA kernels; there float16 and bfloat16 go through
16-bit columns and the kit's tensor-core matmul (as torchvision's go through cuBLAS), so they are checked against
float64 by their relative error, a few units of the dtype's rounding; and compute-sanitizer's memcheck and
racecheck."""

from dataclasses import dataclass

import pytest
import torch
from conftest import assert_sanitizer_clean

from kit import resources
from loader import ops

torchvision = pytest.importorskip("torchvision", reason="torchvision is the reference (requirements.txt)")

HALF_DTYPES = [torch.float16, torch.bfloat16]
# float32/float64: the same samples in the same order as torchvision; the matmuls (ours one batched matmul per chunk,
# its one per group and chunk of up to 32 images) sum in other orders, so rounding alone differs. 16-bit: computed in
# float from the 16-bit values and rounded once, against torchvision in float64 on the same values: within about half
# a 16-bit unit in the last place, plus float's rounding near zero
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=2**-10, atol=1e-4),
    torch.bfloat16: dict(rtol=2**-7, atol=1e-3),
}


@dataclass(repr=False)
class Case:
    """One convolution: sizes, arguments, and how far the offsets reach (in pixels: samples beyond the map read 0)."""

    n: int
    c_in: int
    hw: tuple
    c_out: int
    kernel: tuple
    stride: object = 1
    padding: object = 0
    dilation: object = 1
    weight_groups: int = 1
    offset_groups: int = 1
    mask: bool = True
    bias: bool = True
    reach: float = 2.5

    def __repr__(self):
        return (
            f"n{self.n}-c{self.c_in}-{self.hw[0]}x{self.hw[1]}-o{self.c_out}-k{self.kernel[0]}x{self.kernel[1]}"
            f"-s{self.stride}-p{self.padding}-d{self.dilation}-g{self.weight_groups}-og{self.offset_groups}"
            f"{'-mask' if self.mask else ''}{'-bias' if self.bias else ''}"
        )

    def out_size(self):
        pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
        (sh, sw), (ph, pw), (dh, dw) = pair(self.stride), pair(self.padding), pair(self.dilation)
        kh, kw = self.kernel
        return (self.hw[0] + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (self.hw[1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1

    def tensors(self, dtype=torch.float64, seed=0, device="cpu"):
        """input, offset, weight, bias, mask (bias and mask None where the case has none), drawn in float64 on the
        CPU, rounded to dtype, then moved to `device`."""
        g = torch.Generator().manual_seed(seed)
        kh, kw = self.kernel
        oh, ow = self.out_size()
        taps = self.offset_groups * kh * kw

        def draw(*shape, scale=1.0, uniform=False):
            sample = torch.rand if uniform else torch.randn
            return (sample(shape, generator=g, dtype=torch.float64) * scale).to(dtype).to(device)

        x = draw(self.n, self.c_in, *self.hw)
        offset = draw(self.n, 2 * taps, oh, ow, scale=self.reach)
        weight = draw(self.c_out, self.c_in // self.weight_groups, kh, kw, scale=0.5)
        bias = draw(self.c_out) if self.bias else None
        mask = draw(self.n, taps, oh, ow, uniform=True) if self.mask else None
        return x, offset, weight, bias, mask

    def args(self):
        return dict(stride=self.stride, padding=self.padding, dilation=self.dilation)


CASES = [
    Case(2, 4, (7, 6), 6, (3, 2)),
    Case(2, 4, (8, 9), 4, (3, 3), stride=(2, 1), padding=(1, 2), dilation=(1, 2), weight_groups=2, offset_groups=2,
         mask=False, bias=False),
    Case(1, 6, (5, 7), 4, (2, 3), stride=2, padding=1, dilation=2, weight_groups=2, mask=True, bias=False),
    Case(3, 4, (6, 5), 2, (1, 1), offset_groups=2, mask=True, bias=True, reach=5.0),  # most samples off the map
    Case(2, 2, (1, 1), 4, (3, 3), padding=1, weight_groups=2, offset_groups=2, mask=False, bias=True, reach=1.0),
]  # fmt: skip


def ours_and_grads(tensors, case, grad_out=None):
    """The output and the gradients of (input, offset, weight, bias, mask) that exist, for grad_out."""
    leaves = [t.clone().requires_grad_() if t is not None else None for t in tensors]
    x, offset, weight, bias, mask = leaves
    out = ops.deform_conv2d(x, offset, weight, bias, mask=mask, **case.args())
    return out, _grads(out, leaves, grad_out)


def theirs_and_grads(tensors, case, grad_out=None, dtype=None):
    """torchvision's, in `dtype` (default: the tensors' own) on the same values."""
    leaves = [t.to(dtype or t.dtype).clone().requires_grad_() if t is not None else None for t in tensors]
    x, offset, weight, bias, mask = leaves
    out = torchvision.ops.deform_conv2d(x, offset, weight, bias, mask=mask, **case.args())
    return out, _grads(out, leaves, None if grad_out is None else grad_out.to(out.dtype))


def _grads(out, leaves, grad_out):
    present = [t for t in leaves if t is not None]
    grads = iter(torch.autograd.grad(out, present, grad_out if grad_out is not None else torch.ones_like(out)))
    return [next(grads) if t is not None else None for t in leaves]


NAMES = ["input", "offset", "weight", "bias", "mask"]


def present_pairs(ours, theirs):
    """(name, ours, theirs) for the output and each gradient torchvision gives; ours must be None where it gives none."""
    (out, grads), (ref, ref_grads) = ours, theirs
    for name, a, b in [("output", out, ref), *zip(NAMES, grads, ref_grads)]:
        if b is None:
            assert a is None, name
        else:
            yield name, a, b


def assert_all_close(ours, theirs, dtype):
    """Output and gradients: each of our dtype and shape, each close to torchvision's."""
    for name, a, b in present_pairs(ours, theirs):
        assert a.dtype == dtype and a.shape == b.shape, (name, a.dtype, a.shape, b.shape)
        torch.testing.assert_close(a.to(b.dtype), b, **TOL[dtype], msg=lambda m, name=name: f"{name}: {m}")


# -- first use: torch.compile builds the op while it traces ---------------------------------------------------------


def test_torch_compile_fullgraph_forward_and_backward(device):
    """Before any other call of the op in this file (on the CPU, the first parameter): the loader builds it while
    torch.compile traces the call."""
    torch._dynamo.reset()
    case = CASES[0]

    @torch.compile(fullgraph=True)
    def f(x, offset, weight, bias, mask):
        return ops.deform_conv2d(x * 2, offset, weight, bias, stride=1, mask=mask).sum()

    tensors = [t.float() for t in case.tensors(device=device)]
    leaves = [t.clone().requires_grad_() for t in tensors]
    out = f(*leaves)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out.backward()
    assert "labkit::deform_conv2d_backward" in {e.name for e in prof.events()}
    ref = [t.clone().requires_grad_() for t in tensors]
    expected = torchvision.ops.deform_conv2d(ref[0] * 2, ref[1], ref[2], ref[3], mask=ref[4]).sum()
    expected.backward()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)
    for name, a, b in zip(NAMES, leaves, ref):
        torch.testing.assert_close(a.grad, b.grad, **TOL[torch.float32], msg=lambda m, name=name: f"{name}: {m}")


# -- against torchvision ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_and_gradients_match_torchvision(case, dtype, device):
    tensors = case.tensors(dtype, seed=1, device=device)
    out, _ = ours_and_grads(tensors, case)  # the output's shape, for grad_out
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(dtype).to(device)
    assert_all_close(ours_and_grads(tensors, case, grad_out), theirs_and_grads(tensors, case, grad_out), dtype)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("case", CASES[:3], ids=repr)
def test_16_bit_against_torchvision_in_float64(case, dtype):
    tensors = case.tensors(dtype, seed=2)
    out, _ = ours_and_grads(tensors, case)
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(dtype)
    ours = ours_and_grads(tensors, case, grad_out)
    theirs = theirs_and_grads(tensors, case, grad_out, dtype=torch.float64)
    assert_all_close(ours, theirs, dtype)


def test_samples_on_the_edges_and_on_whole_pixels(device):
    """Samples exactly at -1 and H (outside: they read 0), just inside them, on whole pixels, and at half pixels. At
    a whole pixel the offset's gradient jumps; torchvision takes the slope on the side of the larger coordinate (at
    -1: the one inside), and so must we."""
    case = Case(1, 2, (4, 5), 3, (1, 2), mask=True, bias=True)
    x, offset, weight, bias, mask = case.tensors()
    oh, ow = case.out_size()
    grid_y = torch.arange(oh, dtype=torch.float64).view(oh, 1).expand(oh, ow)
    grid_x = torch.arange(ow, dtype=torch.float64).view(1, ow).expand(oh, ow)
    targets = torch.tensor([-1.5, -1.0, -0.75, -0.5, 0.0, 1.0, 1.5, 2.0, 3.0, 3.25, 3.5, 4.0, 4.5, 5.0, 6.0])
    g = torch.Generator().manual_seed(3)
    for tap in range(2):  # tap (0, tap): its grid point is (oy, ox + tap)
        ty = targets[torch.randint(len(targets), (oh, ow), generator=g)]
        tx = targets[torch.randint(len(targets), (oh, ow), generator=g)]
        offset[0, 2 * tap] = ty - grid_y
        offset[0, 2 * tap + 1] = tx - (grid_x + tap)
    grad_out = torch.randn(1, 3, oh, ow, dtype=torch.float64, generator=g).to(device)
    x, offset, weight, bias, mask = (t.to(device) for t in (x, offset, weight, bias, mask))
    tensors = (x, offset, weight, bias, mask)
    assert_all_close(ours_and_grads(tensors, case, grad_out), theirs_and_grads(tensors, case, grad_out), torch.float64)
    # and without a mask (DCNv1)
    tensors = (x, offset, weight, bias, None)
    assert_all_close(ours_and_grads(tensors, case, grad_out), theirs_and_grads(tensors, case, grad_out), torch.float64)


def test_all_samples_off_the_map_give_the_bias(device):
    case = Case(2, 3, (4, 4), 2, (3, 3), padding=1)
    x, offset, weight, bias, mask = case.tensors(device=device)
    offset = torch.full_like(offset, 50.0)
    out, grads = ours_and_grads((x, offset, weight, bias, mask), case)
    torch.testing.assert_close(out, bias.view(1, 2, 1, 1).expand_as(out), rtol=0, atol=0)
    for name in ("input", "offset", "weight", "mask"):
        assert not grads[NAMES.index(name)].any(), name


def test_a_nan_offset_gives_nan_where_it_samples(device):
    """A NaN position reads no pixel (torchvision casts it to an integer there, which is undefined) and is not taken
    for a 0 either: its output pixel is NaN in every channel, and so are its own offset and mask gradients and the
    weight gradients of its tap; the input gradient stays finite (the sample hands nothing back)."""
    case = CASES[0]
    tensors = list(case.tensors(seed=8, device=device))
    tensors[1][1, 3, 2, 4] = float("nan")  # image 1, tap 1's dx, at output pixel (2, 4)
    out, (g_input, g_offset, g_weight, g_bias, g_mask) = ours_and_grads(tensors, case)
    expect = torch.zeros_like(out, dtype=torch.bool)
    expect[1, :, 2, 4] = True
    assert torch.equal(out.isnan(), expect)
    expect = torch.zeros_like(g_offset, dtype=torch.bool)
    expect[1, 2:4, 2, 4] = True
    assert torch.equal(g_offset.isnan(), expect)
    expect = torch.zeros_like(g_mask, dtype=torch.bool)
    expect[1, 1, 2, 4] = True
    assert torch.equal(g_mask.isnan(), expect)
    expect = torch.zeros_like(g_weight, dtype=torch.bool)
    expect[:, :, 0, 1] = True  # tap 1 is kernel row 0, column 1
    assert torch.equal(g_weight.isnan(), expect)
    assert g_input.isfinite().all() and g_bias.isfinite().all()


def test_a_batch_cut_into_chunks(monkeypatch, device):
    """The column buffer's cap (1 GiB) set to a few KiB: the batch of 5 then runs in chunks of 2, 2 and 1 images
    (each image's columns are 4 * 9 * 25 floats, 3.6 KB), with the same results as in one chunk."""
    case = Case(5, 4, (5, 5), 4, (3, 3), padding=1, offset_groups=2)
    tensors = case.tensors(seed=4, device=device)
    grad_out = torch.randn(5, 4, 5, 5, dtype=torch.float64).to(device)
    whole = ours_and_grads(tensors, case, grad_out)
    monkeypatch.setenv("LABKIT_DEFORM_CONV2D_COLUMN_BYTES", str(2 * 4 * 9 * 25 * 8 + 100))
    chunked = ours_and_grads(tensors, case, grad_out)
    assert_all_close(chunked, whole, torch.float64)
    assert_all_close(chunked, theirs_and_grads(tensors, case, grad_out), torch.float64)
    monkeypatch.setenv("LABKIT_DEFORM_CONV2D_COLUMN_BYTES", "1")  # under one image: one image a chunk
    assert_all_close(ours_and_grads(tensors, case, grad_out), whole, torch.float64)
    monkeypatch.setenv("LABKIT_DEFORM_CONV2D_COLUMN_BYTES", "lots")
    with pytest.raises(ValueError, match="LABKIT_DEFORM_CONV2D_COLUMN_BYTES must be a positive number of bytes"):
        ops.deform_conv2d(*tensors[:4], mask=tensors[4], padding=1)


def test_views_and_expanded_gradients(device):
    """A channels-last input, a strided offset and a transposed weight (copied to contiguous ones first), and a
    gradient that arrives as a stride-0 expansion (out.sum())."""
    case = CASES[0]
    x, offset, weight, bias, mask = case.tensors(torch.float32, seed=5, device=device)
    views = (
        x.contiguous(memory_format=torch.channels_last),
        torch.stack([offset, -offset], dim=-1)[..., 0],
        weight.transpose(2, 3).contiguous().transpose(2, 3),
        bias,
        mask,
    )
    assert not views[1].is_contiguous() and not views[2].is_contiguous()
    assert_all_close(
        ours_and_grads(views, case), theirs_and_grads((x, offset, weight, bias, mask), case), torch.float32
    )


def test_gradcheck(device):
    """All five gradients in float64 against finite differences. The offsets keep every sample off whole pixels, where
    the interpolation bends and a finite difference across the bend is not the slope."""
    case = Case(2, 2, (4, 5), 2, (2, 2), padding=1, offset_groups=2)
    x, offset, weight, bias, mask = case.tensors(seed=6)
    g = torch.Generator().manual_seed(6)  # grid points are whole pixels: fractions in [0.1, 0.9] keep 0.1 away
    whole = torch.randint(-2, 3, offset.shape, generator=g).double()
    offset = whole + 0.1 + 0.8 * torch.rand(offset.shape, generator=g, dtype=torch.float64)
    inputs = [t.to(device).clone().requires_grad_() for t in (x, offset, weight, bias, mask)]
    nondet = 1e-12 if device == "cuda" else 0.0  # the GPU's input gradient sums by atomics, in any order
    f = lambda *t: ops.deform_conv2d(t[0], t[1], t[2], t[3], padding=1, mask=t[4])  # noqa: E731
    assert torch.autograd.gradcheck(f, inputs, nondet_tol=nondet)
    g = lambda *t: ops.deform_conv2d(t[0], t[1], t[2], padding=1)  # noqa: E731  DCNv1, no bias
    assert torch.autograd.gradcheck(g, inputs[:3], nondet_tol=nondet)


def test_a_second_derivative_is_refused_by_name():
    case = CASES[0]
    x, offset, weight, bias, mask = [t.clone().requires_grad_() for t in case.tensors()]
    out = ops.deform_conv2d(x, offset, weight, bias, mask=mask)
    (gx,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match=r"a second derivative .* is not implemented"):
        gx.sum().backward()


def test_backward_runs_our_backward_op(device):
    tensors = [t.clone().requires_grad_() for t in CASES[0].tensors(torch.float32, device=device)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        ops.deform_conv2d(*tensors[:4], mask=tensors[4]).sum().backward()
    names = {e.name for e in prof.events()}
    assert "labkit::deform_conv2d_backward" in names
    assert not any(name.startswith("torchvision::") for name in names)


def test_opcheck(device):
    """The schemas, the fake kernels against the real ones (shapes, strides, dtypes), the Autograd registration and
    torch.compile's tracing of both ops, with and without mask and bias."""
    op, back = torch.ops.labkit.deform_conv2d.default, torch.ops.labkit.deform_conv2d_backward.default
    case = CASES[1]
    x, offset, weight, bias, mask = CASES[0].tensors(torch.float32, seed=7, device=device)
    torch.library.opcheck(op, (x, offset, weight, bias, mask, 1, 1, 0, 0, 1, 1))
    grads = [t.clone().requires_grad_() for t in (x, offset, weight, bias, mask)]
    torch.library.opcheck(op, (*grads, 1, 1, 0, 0, 1, 1))
    x2, offset2, weight2, _, _ = case.tensors(torch.bfloat16, seed=7, device=device)
    torch.library.opcheck(op, (x2, offset2, weight2, None, None, 2, 1, 1, 2, 1, 2))
    grad_out = torch.randn(2, 6, 5, 5, device=device)
    torch.library.opcheck(back, (grad_out, x, offset, weight, mask, 1, 1, 0, 0, 1, 1))
    torch.library.opcheck(back, (grad_out, x, offset, weight, None, 1, 1, 0, 0, 1, 1))


# -- empty inputs ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_empty_batch_and_no_output_channels(dtype, device):
    """No images: an empty output of the right shape and zero (or empty) gradients, as torchvision gives. No output
    channels: an empty output, and zero gradients for input, offset and mask."""
    case = Case(0, 4, (5, 6), 6, (3, 3), padding=1, weight_groups=2, offset_groups=2)
    tensors = case.tensors(dtype, device=device)
    out, grads = ours_and_grads(tensors, case)
    assert out.shape == (0, 6, 5, 6) and out.dtype == dtype
    for name, grad, t in zip(NAMES, grads, tensors):
        assert grad.shape == t.shape and grad.dtype == dtype and not grad.any(), name
    case = Case(2, 4, (5, 6), 0, (3, 3), padding=1, weight_groups=2)
    tensors = case.tensors(dtype, device=device)
    out, grads = ours_and_grads(tensors, case)
    assert out.shape == (2, 0, 5, 6)
    for name, grad, t in zip(NAMES, grads, tensors):
        assert grad.shape == t.shape and not grad.any(), name


# -- bad input ---------------------------------------------------------------------------------------------------------


def _good():
    """input (2, 4, 6, 6), offset (2, 2 * 2 * 9, 4, 4): 2 offset groups, weight (6, 2, 3, 3): 2 weight groups, mask
    (2, 18, 4, 4), bias (6)."""
    return Case(2, 4, (6, 6), 6, (3, 3), weight_groups=2, offset_groups=2).tensors(torch.float32)


NAMES_AT = {name: i for i, name in enumerate(NAMES)}

BAD = [  # (the argument changed, how, keyword arguments, error, the message after "deform_conv2d: ")
    ("input", lambda t: t[0], {}, ValueError, r"input must be 4-D \(N, C_in, H, W\), but has shape \[4, 6, 6\]"),
    ("weight", lambda t: t[0], {}, ValueError, r"weight must be 4-D \(C_out, C_in / weight_groups, kernel_h, "),
    ("offset", lambda t: t[0], {}, ValueError, r"offset must be 4-D \(N, 2 \* offset_groups \* kernel_h \* "),
    ("mask", lambda t: t[0], {}, ValueError, r"mask must be 4-D \(N, offset_groups \* kernel_h \* kernel_w, "),
    ("bias", lambda t: t[None], {}, ValueError, r"bias must be 1-D \(C_out,\), but has shape \[1, 6\]"),
    ("input", lambda t: t[:, :0], {}, ValueError, r"input must have at least one channel, but has shape \[2, 0, "),
    ("input", lambda t: t.long(), {}, TypeError, r"input must be a floating-point tensor \(.*\), but got Long"),
    ("offset", lambda t: t.double(), {}, TypeError, "input and offset must have the same dtype, but input is Float "),
    ("mask", lambda t: t.half(), {}, TypeError, "input and mask must have the same dtype, .* mask is Half"),
    ("bias", lambda t: t.double(), {}, TypeError, "input and bias must have the same dtype, .* bias is Double"),
    ("weight", lambda t: t.repeat(1, 2, 1, 1)[:, :3], {}, ValueError, r"weight.shape\[1\] \(input channels per "
     r"weight group\) must divide input's C_in = 4, but weight has shape \[6, 3, 3, 3\]"),
    ("weight", lambda t: t[:, :0], {}, ValueError, r"weight.shape\[1\] .* must divide input's C_in = 4"),
    ("weight", lambda t: t[:5], {}, ValueError, r"weight's C_out = 5 must be a multiple of the weight groups, C_in "
     r"/ weight.shape\[1\] = 2"),
    ("weight", lambda t: t[..., :0], {}, ValueError, r"the kernel must be at least 1 x 1, but weight has shape "),
    ("offset", lambda t: t[:, :35], {}, ValueError, r"offset.shape\[1\] must be a positive multiple of 2 \* "
     r"kernel_h \* kernel_w = 18 .*, but offset has shape \[2, 35, 4, 4\]"),
    ("offset", lambda t: t.repeat(1, 2, 1, 1)[:, :54], {}, ValueError, r"the offset groups, offset.shape\[1\] / "
     r"\(2 \* kernel_h \* kernel_w\) = 3, must divide input's C_in = 4"),
    ("offset", lambda t: t[:, :, :3], {}, ValueError, r"offset must have shape \(N, 2 \* offset_groups \* "
     r"kernel_h \* kernel_w, out_h, out_w\) = \(2, 36, 4, 4\), but has shape \[2, 36, 3, 4\]"),
    ("offset", lambda t: t[:1], {}, ValueError, r"offset must have shape .* = \(2, 36, 4, 4\), but has shape \[1, "),
    ("mask", lambda t: t[:, :9], {}, ValueError, r"mask must have shape \(N, offset_groups \* kernel_h \* "
     r"kernel_w, out_h, out_w\) = \(2, 18, 4, 4\), but has shape \[2, 9, 4, 4\]"),
    ("bias", lambda t: t[:5], {}, ValueError, r"bias must have shape \(C_out,\) = \(6,\), but has shape \[5\]"),
    ("input", None, dict(stride=(1, 0)), ValueError, r"stride must be positive, but is \(1, 0\)"),
    ("input", None, dict(padding=-1), ValueError, r"padding must not be negative, but is \(-1, -1\)"),
    ("input", None, dict(dilation=(0, 1)), ValueError, r"dilation must be positive, but is \(0, 1\)"),
    ("input", None, dict(dilation=4), ValueError, r"the output would be empty: the padded input is 6 x 6 but the "
     r"dilated kernel spans 9 x 9"),
]  # fmt: skip
BAD_IDS = [f"{name}-{match[:30]}" for name, _, _, _, match in BAD]


def _bad(name, change, device="cpu"):
    """_good()'s tensors on `device`, the one named changed."""
    tensors = [t.to(device) for t in _good()]
    if change is not None:
        tensors[NAMES_AT[name]] = change(tensors[NAMES_AT[name]])
    return tensors


@pytest.mark.parametrize("name, change, kwargs, error, match", BAD, ids=BAD_IDS)
def test_bad_input(name, change, kwargs, error, match):
    x, offset, weight, bias, mask = _bad(name, change)
    with pytest.raises(error, match="deform_conv2d: " + match):
        ops.deform_conv2d(x, offset, weight, bias, mask=mask, **kwargs)


@pytest.mark.parametrize("name, change, kwargs, error, match", BAD, ids=BAD_IDS)
def test_the_fake_kernel_says_the_same(name, change, kwargs, error, match):
    """On meta tensors the op runs its fake kernel (op.py), the one torch.compile traces: the same checks, the same
    errors."""
    x, offset, weight, bias, mask = _bad(name, change, "meta")
    with pytest.raises(error, match="deform_conv2d: " + match):
        ops.deform_conv2d(x, offset, weight, bias, mask=mask, **kwargs)


def test_tensors_on_two_devices():
    x, offset, weight, bias, mask = _good()
    with pytest.raises(RuntimeError, match="input and weight must be on the same device, but input is on cpu and "):
        ops.deform_conv2d(x, offset, weight.to("meta"), bias, mask=mask)


@pytest.mark.parametrize("name", ["stride", "padding", "dilation"])
def test_bad_pairs(name):
    x, offset, weight, bias, mask = _good()
    for value in ((1, 1, 1), "1", 1.0, True):
        with pytest.raises(ValueError, match=f"deform_conv2d: {name} must be an int or a pair of ints"):
            ops.deform_conv2d(x, offset, weight, bias, mask=mask, **{name: value})


def test_bad_backward_inputs():
    x, offset, weight, _, mask = _good()
    back = torch.ops.labkit.deform_conv2d_backward
    with pytest.raises(
        ValueError,
        match=r"deform_conv2d_backward: grad_out must have the output's shape \(N, C_out, "
        r"out_h, out_w\) = \(2, 6, 4, 4\), but has shape \[2, 6, 4, 5\]",
    ):
        back(torch.ones(2, 6, 4, 5), x, offset, weight, mask, 1, 1, 0, 0, 1, 1)
    with pytest.raises(TypeError, match="deform_conv2d_backward: grad_out and input must have the same dtype"):
        back(torch.ones(2, 6, 4, 4).double(), x, offset, weight, mask, 1, 1, 0, 0, 1, 1)


# -- the GPU only ------------------------------------------------------------------------------------------------------

# The relative error (over the whole tensor: the norm of the difference over the norm of the reference) that 16-bit
# columns and a 16-bit matmul leave: each sample and each product rounded once or twice, independently, so about
# the dtype's unit roundoff; 8 of them allow the sums' own rounding. A wrong tap, pixel or channel is off by ~100%.
HALF_UNIT = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("case", [*CASES, Case(2, 32, (12, 11), 24, (3, 3), padding=1, offset_groups=4)], ids=repr)
def test_gpu_16_bit_within_rounding_of_float64(case, dtype):
    tensors = case.tensors(dtype, seed=2, device="cuda")
    out, _ = ours_and_grads(tensors, case)
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(dtype).cuda()
    ours = ours_and_grads(tensors, case, grad_out)
    theirs = theirs_and_grads(tensors, case, grad_out, dtype=torch.float64)
    for name, a, b in present_pairs(ours, theirs):
        assert a.dtype == dtype and a.shape == b.shape and a.is_cuda, (name, a.dtype, a.shape)
        error = float((a.double() - b).norm() / b.norm().clamp(min=1e-30))
        assert error <= 8 * HALF_UNIT[dtype], f"{name}: relative error {error:.3g}"


SANITIZE_CHILD = """
import torch
from loader import ops
for dtype in (torch.float32, torch.float16):
    for mask in (True, False):
        x = torch.randn(2, 8, 9, 7, device="cuda", dtype=dtype, requires_grad=True)
        offset = (3 * torch.randn(2, 2 * 2 * 9, 9, 7, device="cuda")).to(dtype).requires_grad_()
        weight = torch.randn(6, 4, 3, 3, device="cuda", dtype=dtype, requires_grad=True)
        m = torch.rand(2, 2 * 9, 9, 7, device="cuda", dtype=dtype, requires_grad=True) if mask else None
        ops.deform_conv2d(x, offset, weight, None, padding=1, mask=m).sum().backward()
torch.cuda.synchronize()
print("deform-conv2d-child-done")
"""


@pytest.mark.cuda
@pytest.mark.skipif(resources.tool("compute-sanitizer") is None, reason="no compute-sanitizer here")
@pytest.mark.parametrize("check", ["memcheck", "racecheck"])
def test_compute_sanitizer_finds_nothing(check):
    """Two offset groups and two weight groups, samples far off the map (offsets of 3 pixels), with and without a
    mask, float32 and float16 (the kit's matmul between the kernels), forward and backward."""
    from loader import ops as built  # build in this process first: the child then only loads

    built.deform_conv2d(*(t.cuda() for t in _good()[:3]))
    assert_sanitizer_clean(check, SANITIZE_CHILD, "deform-conv2d-child-done")
