"""ops.roi_align against torchvision.ops.roi_align (the reference, on the same device): forward and backward in every
dtype (16-bit against torchvision in float32 on the same values), boxes partly outside the map, tiny and inverted
boxes, aligned True/False, sampling_ratio -1/0/2, output sizes, both backward versions, the list-of-boxes form,
channels-last input, gradcheck and gradgradcheck, opcheck, torch.compile, empty inputs, bad input; on a GPU also
the current stream and compute-sanitizer's memcheck, racecheck and synccheck."""

import pytest
import torch
from conftest import assert_sanitizer_clean

from kit import resources
from loader import ops

torchvision = pytest.importorskip("torchvision", reason="torchvision is the reference (requirements.txt)")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]
VERSIONS = ["atomic", "channels_last"]
# float32/float64: the same sums in the same order as torchvision, so rounding (and, on the GPU, FMA contraction and
# the order of the atomic adds) alone differs. 16-bit: ours computes in float from the 16-bit values and rounds once,
# so against torchvision in float32 on the same values it is within half a 16-bit ulp
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float64: dict(rtol=1e-12, atol=1e-14),
    torch.float16: dict(rtol=2**-10, atol=1e-5),
    torch.bfloat16: dict(rtol=2**-7, atol=1e-4),
}


def make_rois(k, n, height, width, scale=1.0, seed=0, device="cpu"):
    """k boxes (batch index, x1, y1, x2, y2) in image coordinates (feature map size / scale): most inside, some
    partly or wholly outside the map, some under a pixel, a few inverted (x2 < x1)."""
    g = torch.Generator().manual_seed(seed)
    h, w = height / scale, width / scale
    xy = torch.rand(k, 2, generator=g) * torch.tensor([w + 6, h + 6]) - 3
    size = torch.rand(k, 2, generator=g) * torch.tensor([w, h]) * 0.6
    size[: k // 5] *= 0.02  # tiny: bins much smaller than a pixel
    size[k // 5 : k // 5 + 2] *= -0.5  # inverted
    index = torch.randint(0, n, (k, 1), generator=g).double()
    return torch.cat([index, xy, xy + size], dim=1).to(device)


def _inputs(dtype, device, shape=(2, 3, 11, 13), k=24, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed + 100)
    x = torch.randn(shape, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    rois = make_rois(k, shape[0], shape[2], shape[3], scale, seed, device).to(dtype)
    return x, rois


def reference(x, rois, *args):
    """torchvision's result, in float32 for the 16-bit dtypes (from the same 16-bit values)."""
    if x.dtype in HALF_DTYPES or rois.dtype in HALF_DTYPES:
        return torchvision.ops.roi_align(x.float(), rois.float(), *args)
    return torchvision.ops.roi_align(x, rois, *args)


def assert_close(ours, ref, dtype):
    assert ours.dtype == dtype
    torch.testing.assert_close(ours.to(ref.dtype), ref, **TOL[dtype])


def assert_float32_gradient_close(ours, x, rois, args, grad_out):
    """A float32 gradient against torchvision's. Each pixel's gradient is a sum of many adds, atomic ones in an
    order that changes from run to run (and torchvision's differs from ours), so where the terms cancel, a fixed
    relative tolerance fails on rounding alone. The bound is 128 float32 roundings of the sum of the terms' absolute
    values, which is torchvision's gradient of |grad_out| (the bilinear weights are never negative). A wrong weight
    or pixel misses it by orders of magnitude."""
    assert ours.dtype == torch.float32
    xt = x.detach().clone().requires_grad_()
    out = reference(xt, rois, *args)
    (theirs,) = torch.autograd.grad(out, xt, grad_out, retain_graph=True)
    (magnitude,) = torch.autograd.grad(out, xt, grad_out.abs())
    bound = 128 * 2.0**-24 * magnitude.double() + 1e-30
    worst = float(((ours.double() - theirs.double()).abs() / bound).max())
    assert worst <= 1, f"the gradient is off by {worst:.3g} times the rounding bound"


CASES = [  # output_size, spatial_scale, sampling_ratio, aligned
    ((7, 7), 1.0, -1, False),
    ((7, 7), 1.0, -1, True),
    ((3, 5), 0.5, 0, False),
    ((3, 5), 0.5, 0, True),
    ((7, 7), 0.25, 2, False),
    ((2, 4), 0.25, 2, True),
    (1, 1.0, 1, True),
    ((5, 1), 2.0, 3, False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward_matches_torchvision(device, dtype, case):
    """Both input layouts (on the GPU each has a kernel of its own) against torchvision on the (N, C, H, W) one."""
    x, rois = _inputs(dtype, device)
    expected = reference(x, rois, *case)
    size = (case[0], case[0]) if isinstance(case[0], int) else case[0]
    for layout in (torch.contiguous_format, torch.channels_last):
        out = ops.roi_align(x.contiguous(memory_format=layout), rois, *case)
        assert out.shape == (rois.shape[0], x.shape[1], *size) and out.device == x.device and out.is_contiguous()
        assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_channel_groups_and_many_bins(device, dtype):
    """70 channels (two full groups of 32 and a part) and 9 x 8 = 72 bins (more than the channels-last forward
    gathers in shared memory before writing), in both layouts."""
    x, rois = _inputs(dtype, device, shape=(2, 70, 12, 10), k=13)
    expected = reference(x, rois, (9, 8), 0.5, 2, True)
    for layout in (torch.contiguous_format, torch.channels_last):
        assert_close(ops.roi_align(x.contiguous(memory_format=layout), rois, (9, 8), 0.5, 2, True), expected, dtype)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backward_matches_torchvision(device, dtype, case, version):
    x, rois = _inputs(dtype, device, seed=1)
    xr = x.clone().requires_grad_()
    out = ops.roi_align(xr, rois, *case, version=version)
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(device=device, dtype=dtype)
    (ours,) = torch.autograd.grad(out, xr, grad_out)
    assert ours.shape == x.shape
    if dtype == torch.float32:
        assert_float32_gradient_close(ours, x, rois, case, grad_out)
        return
    xf = (x.float() if dtype in HALF_DTYPES else x.clone()).requires_grad_()
    ref_out = reference(xf, rois, *case)
    (theirs,) = torch.autograd.grad(ref_out, xf, grad_out.to(ref_out.dtype))
    assert_close(ours, theirs, dtype)


@pytest.mark.parametrize("shape", [(1, 4, 1, 1), (3, 2, 20, 7), (1, 1, 64, 3), (2, 33, 9, 9)], ids=str)
@pytest.mark.parametrize("scale", [1.0, 1 / 16])
def test_awkward_maps_and_scales(device, shape, scale):
    """A one-pixel map, tall and narrow maps, channel counts that are no multiple of 32 (the channels-last
    backward's lanes), a stride-16 scale."""
    x, rois = _inputs(torch.float32, device, shape=shape, k=40, scale=scale, seed=2)
    for aligned in (False, True):
        args = ((4, 3), scale, -1, aligned)
        assert_close(ops.roi_align(x, rois, *args), reference(x, rois, *args), torch.float32)
        for version in VERSIONS:
            xr = x.clone().requires_grad_()
            out = ops.roi_align(xr, rois, *args, version=version)
            (ours,) = torch.autograd.grad(out.sum(), xr)
            assert_float32_gradient_close(ours, x, rois, args, torch.ones_like(out))


def test_many_boxes_and_large_adaptive_grids(device):
    """Boxes over the whole map with sampling_ratio=-1: more samples per axis than the kernels keep in shared memory
    (128), so they compute them on the fly."""
    x = torch.randn(2, 8, 300, 40, device=device)
    rois = torch.tensor([[0, 0, 0, 39, 299], [1, -5, -5, 45, 305], [1, 2, 3, 30, 250]], device=device).float()
    rois = torch.cat([rois, make_rois(500, 2, 300, 40, seed=3, device=device).float()])
    args = ((2, 2), 1.0, -1, True)
    assert_close(ops.roi_align(x, rois, *args), reference(x, rois, *args), torch.float32)
    g = torch.randn(rois.shape[0], 8, 2, 2, device=device)
    xr, xt = x.clone().requires_grad_(), x.clone().requires_grad_()
    for version in VERSIONS:
        (ours,) = torch.autograd.grad(ops.roi_align(xr, rois, *args, version=version), xr, g)
        (theirs,) = torch.autograd.grad(reference(xt, rois, *args), xt, g)
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_list_of_boxes(device):
    x, _ = _inputs(torch.float32, device, shape=(3, 2, 10, 12))
    boxes = [make_rois(k, 1, 10, 12, seed=k, device=device)[:, 1:].float() for k in (5, 0, 7)]
    ours = ops.roi_align(x, boxes, (3, 3), 1.0, 2, True)
    torch.testing.assert_close(ours, torchvision.ops.roi_align(x, boxes, (3, 3), 1.0, 2, True), **TOL[torch.float32])
    assert ops.roi_align(x, [], 2).shape == (0, 2, 2, 2)


def test_views_and_channels_last(device):
    """A channels-last input (read in place on the GPU) and a sliced one (read through a contiguous copy),
    non-contiguous boxes, and a gradient that arrives as a stride-0 expansion (out.sum())."""
    x, rois = _inputs(torch.float32, device, shape=(2, 6, 15, 17))
    args = ((7, 7), 0.5, 2, False)
    expected = reference(x, rois, *args)
    assert_close(ops.roi_align(x.to(memory_format=torch.channels_last), rois, *args), expected, torch.float32)
    wide = torch.cat([x, x], dim=1)[:, ::2]
    assert_close(ops.roi_align(wide, rois, *args), reference(wide.contiguous(), rois, *args), torch.float32)
    strided_rois = torch.cat([rois, rois], dim=1)[:, :5]
    assert not strided_rois.is_contiguous()
    assert_close(ops.roi_align(x, strided_rois, *args), expected, torch.float32)
    for version in VERSIONS:
        xr = x.clone().to(memory_format=torch.channels_last).requires_grad_()
        ops.roi_align(xr, rois, *args, version=version).sum().backward()
        xt = x.clone().requires_grad_()
        reference(xt, rois, *args).sum().backward()
        assert_close(xr.grad, xt.grad, torch.float32)


def test_channels_last_backward_gives_channels_last_strides(device):
    x, rois = _inputs(torch.float32, device, shape=(2, 5, 6, 7))
    g = torch.randn(rois.shape[0], 5, 2, 2, device=device)
    for dtype in (torch.float32, torch.bfloat16):
        for version, channels_last in ((1, False), (2, True)):
            grad = torch.ops.labkit.roi_align_backward(
                g.to(dtype), rois.to(dtype), 1.0, 2, 2, 2, 5, 6, 7, -1, False, version
            )
            assert grad.shape == (2, 5, 6, 7) and grad.dtype == dtype
            assert grad.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    a = torch.ops.labkit.roi_align_backward(g, rois, 1.0, 2, 2, 2, 5, 6, 7, -1, False, 1)
    b = torch.ops.labkit.roi_align_backward(g, rois, 1.0, 2, 2, 2, 5, 6, 7, -1, False, 2)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_backward_runs_our_backward_kernel():
    x, rois = _inputs(torch.float32, "cpu")
    x.requires_grad_()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        ops.roi_align(x, rois, 3).sum().backward()
    names = {e.name for e in prof.events()}
    assert "labkit::roi_align_backward" in names
    assert not any(name.startswith("torchvision::") for name in names)


def test_gradcheck(device):
    """RoIAlign is linear in its input, so finite differences are exact up to rounding; the backward is linear in
    grad_out, and its gradient is the forward (gradgradcheck)."""
    x, rois = _inputs(torch.float64, device, shape=(2, 2, 6, 7), k=6)
    x.requires_grad_()
    for aligned, sr in ((False, -1), (True, 2)):
        for version in VERSIONS:
            f = lambda t: ops.roi_align(t, rois, (3, 2), 0.8, sr, aligned, version=version)  # noqa: B023, E731
            # nondet_tol: on the GPU the atomic adds come in a different order on each run
            assert torch.autograd.gradcheck(f, (x,), nondet_tol=1e-12)
            assert torch.autograd.gradgradcheck(f, (x,), nondet_tol=1e-12)


def test_opcheck(device):
    x, rois = _inputs(torch.float32, device, shape=(2, 3, 8, 9), k=5)
    op, back = torch.ops.labkit.roi_align.default, torch.ops.labkit.roi_align_backward.default
    torch.library.opcheck(op, (x, rois, 0.5, 3, 2, -1, False, 1))
    torch.library.opcheck(op, (x.clone().requires_grad_(), rois, 1.0, 2, 2, 2, True, 1))
    torch.library.opcheck(op, (x.clone().requires_grad_(), rois, 1.0, 2, 2, 0, True, 2))
    torch.library.opcheck(op, (x.bfloat16(), rois.bfloat16(), 1.0, 4, 4, 2, False, 1))
    g = torch.randn(5, 3, 3, 2, device=device)
    for version in (1, 2):
        torch.library.opcheck(back, (g, rois, 0.5, 3, 2, 2, 3, 8, 9, -1, False, version))
        torch.library.opcheck(back, (g.clone().requires_grad_(), rois, 0.5, 3, 2, 2, 3, 8, 9, 2, True, version))


def test_torch_compile_fullgraph_forward_and_backward(device):
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(t, r):
        return ops.roi_align(t * 2, r, (3, 3), 0.5, 2, True).sum()

    x, rois = _inputs(torch.float32, device, shape=(2, 4, 12, 10))
    x.requires_grad_()
    out = f(x, rois)
    torch.testing.assert_close(out, reference(x * 2, rois, (3, 3), 0.5, 2, True).sum(), rtol=1e-5, atol=1e-4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out.backward()
    assert "labkit::roi_align_backward" in {e.name for e in prof.events()}
    xt = x.detach().clone().requires_grad_()
    reference(xt * 2, rois, (3, 3), 0.5, 2, True).sum().backward()
    torch.testing.assert_close(x.grad, xt.grad, **TOL[torch.float32])


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_inputs(device, dtype):
    """No boxes: an empty output of the right shape and a zero gradient of the input's shape. No channels, and an
    empty batch with no boxes, too."""
    x = torch.randn(2, 3, 5, 6, device=device).to(dtype).requires_grad_()
    none = torch.empty(0, 5, device=device, dtype=dtype)
    out = ops.roi_align(x, none, (2, 3))
    assert out.shape == (0, 3, 2, 3) and out.dtype == dtype
    for version in VERSIONS:
        (grad,) = torch.autograd.grad(ops.roi_align(x, none, (2, 3), version=version).sum(), x)
        assert grad.shape == x.shape and grad.dtype == dtype and not grad.any()
    rois = make_rois(4, 2, 5, 6, device=device).to(dtype)
    assert ops.roi_align(x[:, :0], rois, 2).shape == (4, 0, 2, 2)
    assert ops.roi_align(x[:0], none, 2).shape == (0, 3, 2, 2)
    assert ops.roi_align(x, [none[:, :4], none[:, :4]], 2).shape == (0, 3, 2, 2)


# -- bad input ---------------------------------------------------------------------------------------------------------


def _bad(device="cpu"):
    return torch.randn(2, 3, 8, 8, device=device), make_rois(4, 2, 8, 8, device=device).float()


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda x, r: (x, r[:, 1:]), ValueError, r"roi_align: boxes must have shape \(K, 5\).*has shape \[4, 4\]"),
        (lambda x, r: (x, r[0]), ValueError, r"boxes must have shape \(K, 5\)"),
        (lambda x, r: (x[0], r), ValueError, r"roi_align: input must be 4-D \(N, C, H, W\), but has shape \[3, 8, 8\]"),
        (lambda x, r: (x, r.double()), TypeError, "input and boxes must have the same dtype, but input is Float"),
        (lambda x, r: (x.long(), r), TypeError, "roi_align: input must be a floating-point tensor .* but got Long"),
        (lambda x, r: (x, [r[:, 1:], r]), ValueError, r"boxes\[1\] must be a \(Ki, 4\) tensor .* is \[4, 5\]"),
    ],
)
def test_bad_input(change, error, match):
    with pytest.raises(error, match=match):
        ops.roi_align(*change(*_bad()), (2, 2))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(output_size=(0, 3)), r"output_size must be positive, but is \(0, 3\)"),
        (dict(output_size=-2), r"output_size must be positive, but is \(-2, -2\)"),
        (dict(output_size=2, sampling_ratio=-2), "sampling_ratio must be -1 or 0 .* but is -2"),
    ],
)
def test_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ops.roi_align(*_bad(), **kwargs)


def test_bad_version():
    with pytest.raises(ValueError, match="version must be \"fast\" or one of 'atomic', 'channels_last', got 'gather'"):
        ops.roi_align(*_bad(), 2, version="gather")
    with pytest.raises(ValueError, match=r"the backward version must be 1 \(atomic\) or 2 \(channels_last\), but is 3"):
        torch.ops.labkit.roi_align(*_bad(), 1.0, 2, 2, -1, False, 3)


@pytest.mark.parametrize("index", [2.0, -1.0, 7.5, float("nan"), float("inf")])
def test_batch_index_out_of_range_on_the_cpu(index):
    """The CPU checks every box's batch index (truncated to an integer, as torchvision does) before any work."""
    x, rois = _bad()
    rois[3, 0] = index
    with pytest.raises(IndexError, match=r"roi_align: boxes\[3, 0\] \(the batch index\) is .*, but input has 2 "):
        ops.roi_align(x, rois, 2)
    with pytest.raises(IndexError, match=r"roi_align_backward: boxes\[3, 0\]"):
        torch.ops.labkit.roi_align_backward(torch.ones(4, 3, 2, 2), rois, 1.0, 2, 2, 2, 3, 8, 8, -1, False, 1)


def test_batch_index_truncates_like_torchvision():
    x, rois = _bad()
    rois[:, 0] = torch.tensor([0.9, 1.99, -0.5, 1.0])  # (int) truncates: 0, 1, 0, 1
    torch.testing.assert_close(ops.roi_align(x, rois, 3), torchvision.ops.roi_align(x, rois, 3), **TOL[torch.float32])


def test_bad_backward_inputs():
    x, rois = _bad()
    g = torch.randn(4, 3, 2, 2)
    with pytest.raises(ValueError, match=r"grad_out must have shape \(K, C, PH, PW\) = \(4, 3, 2, 3\), but has shape"):
        torch.ops.labkit.roi_align_backward(g, rois, 1.0, 2, 3, 2, 3, 8, 8, -1, False, 1)
    with pytest.raises(TypeError, match="grad_out and boxes must have the same dtype"):
        torch.ops.labkit.roi_align_backward(g, rois.double(), 1.0, 2, 2, 2, 3, 8, 8, -1, False, 1)


# -- on a GPU ----------------------------------------------------------------------------------------------------------


@pytest.mark.cuda
def test_cpu_and_cuda_tensors_mixed():
    x, rois = _bad()
    with pytest.raises(RuntimeError, match="input and boxes must be on the same device, but input is on cpu"):
        ops.roi_align(x, rois.cuda(), 2)
    with pytest.raises(RuntimeError, match="input and boxes must be on the same device, but input is on cuda"):
        ops.roi_align(x.cuda(), rois, 2)


@pytest.mark.cuda
def test_batch_index_out_of_range_on_the_gpu_gives_zeros():
    """The GPU does not check (a copy to the host and a wait per call): that box reads nothing and writes zeros, and
    passes no gradient; the other boxes are unaffected."""
    x, rois = _bad("cuda")
    rois[1, 0], rois[2, 0] = 5.0, float("nan")
    x.requires_grad_()
    out = ops.roi_align(x, rois, 3, 1.0, 2)
    assert not out[1:3].any()
    good = rois[[0, 3]]
    torch.testing.assert_close(out[[0, 3]], reference(x, good, 3, 1.0, 2), **TOL[torch.float32])
    for version in VERSIONS:
        (grad,) = torch.autograd.grad(ops.roi_align(x, rois, 3, 1.0, 2, version=version).sum(), x)
        (expected,) = torch.autograd.grad(reference(x, good, 3, 1.0, 2).sum(), x)
        torch.testing.assert_close(grad, expected, **TOL[torch.float32])


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_benchmark_shape_on_the_gpu(dtype):
    """bench/bench_roi_align.py's shape: 1000 boxes on a 2 x 256 x 200 x 272 map, 7 x 7, sampling_ratio 2."""
    x = torch.randn(2, 256, 200, 272, device="cuda").to(dtype)
    rois = make_rois(1000, 2, 200, 272, scale=0.25, seed=5, device="cuda").to(dtype)
    args = ((7, 7), 0.25, 2, False)
    assert_close(ops.roi_align(x, rois, *args), reference(x, rois, *args), dtype)
    g = torch.randn(1000, 256, 7, 7, device="cuda").to(dtype)
    xf = (x.float() if dtype in HALF_DTYPES else x).clone().requires_grad_()
    (theirs,) = torch.autograd.grad(reference(xf, rois, *args), xf, g.to(xf.dtype))
    for version in VERSIONS:
        xr = x.clone().requires_grad_()
        (ours,) = torch.autograd.grad(ops.roi_align(xr, rois, *args, version=version), xr, g)
        # thousands of adds per pixel, in an order that changes from run to run: float32's error grows with them
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else TOL[dtype]
        torch.testing.assert_close(ours.to(theirs.dtype), theirs, **tol)


@pytest.mark.cuda
def test_runs_on_the_inputs_gpu_and_current_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.randn(2, 64, 100, 120, device="cuda", requires_grad=True)
        rois = make_rois(300, 2, 100, 120, device="cuda").float()
        out = ops.roi_align(x, rois, 7, 1.0, 2)
        (grad,) = torch.autograd.grad(out.sum(), x)
        expected = reference(x, rois, 7, 1.0, 2)
        (expected_grad,) = torch.autograd.grad(expected.sum(), x)
    s.synchronize()
    torch.testing.assert_close(out, expected, **TOL[torch.float32])
    torch.testing.assert_close(grad, expected_grad, rtol=1e-5, atol=1e-5)


SANITIZE_CHILD = """
import torch
from loader import ops
torch.manual_seed(0)
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
    for (n, c, h, w), k, layout in (((2, 3, 9, 11), 17, torch.contiguous_format),
                                    ((1, 40, 5, 3), 6, torch.channels_last), ((2, 1, 1, 1), 3, torch.contiguous_format)):
        x = torch.randn(n, c, h, w, device="cuda").to(dtype).contiguous(memory_format=layout).requires_grad_()
        xy = torch.rand(k, 2, device="cuda") * torch.tensor([w + 6.0, h + 6.0], device="cuda") - 3
        size = torch.rand(k, 2, device="cuda") * 8 - 1  # some inverted
        index = torch.randint(0, n, (k, 1), device="cuda").float()
        index[0] = 9  # out of range: zeros, no reads
        rois = torch.cat([index, xy, xy + size], dim=1).to(dtype)
        for args in (((7, 7), 1.0, -1, False), ((3, 2), 0.5, 2, True), (2, 1.0, 0, True)):
            for version in ("atomic", "channels_last"):
                ops.roi_align(x, rois, *args, version=version).sum().backward()
x = torch.randn(2, 70, 6, 7, device="cuda").contiguous(memory_format=torch.channels_last).requires_grad_()
rois = torch.tensor([[1, -1, 0, 5, 4], [0, 2, 1, 3, 7]], device="cuda").float()
ops.roi_align(x, rois, (9, 8), 1.0, 1).sum().backward()  # a part channel group; more bins than the staging holds
rois = torch.tensor([[0, -3, -3, 25, 305]], device="cuda").float()  # past the shared-memory tables
for layout in (torch.contiguous_format, torch.channels_last):
    x = torch.randn(1, 2, 300, 20, device="cuda").contiguous(memory_format=layout).requires_grad_()
    for version in ("atomic", "channels_last"):
        ops.roi_align(x, rois, 2, 1.0, -1, True, version=version).sum().backward()
torch.cuda.synchronize()
print("roi-align-child-done")
"""


@pytest.mark.cuda
@pytest.mark.skipif(resources.tool("compute-sanitizer") is None, reason="no compute-sanitizer here")
@pytest.mark.parametrize("check", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_finds_nothing(check):
    from loader import ops as built  # build in this process first: the child then only loads

    built.roi_align(torch.ones(1, 1, 2, 2, device="cuda"), torch.zeros(1, 5, device="cuda"), 1)
    assert_sanitizer_clean(check, SANITIZE_CHILD, "roi-align-child-done")
