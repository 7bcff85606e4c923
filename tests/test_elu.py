"""ops.elu against PyTorch's own F.elu and aten.elu_backward: forward and backward in every dtype, every 16-bit
input, awkward sizes, views, alpha, gradcheck, opcheck, torch.compile, live rebuild, the ELU tutorial's kernels, bad input."""

import pytest
import torch
import torch.nn.functional as F
from conftest import N_GPUS

from kit.notebook import edit
from loader import Ops, ops

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]
# 0, 1, 3; below, at and past a 16-byte pack (2 doubles, 4 floats, 8 halves), the 256-thread block and the
# 512 packs one block of the vector kernel covers (2048 floats, 4096 halves); a large one
SIZES = [0, 1, 3, 7, 8, 9, 255, 256, 257, 2047, 2048, 2049, 4096 + 5, (1 << 20) + 3]
# float32/float64: a few ulps (on the GPU both sides run expm1/exp from the same library and agree exactly).
# 16-bit: both compute in float and round once; the default tolerance allows one 16-bit ulp
TOL = {
    torch.float32: dict(rtol=1e-6, atol=1e-9),
    torch.float64: dict(rtol=2e-15, atol=1e-18),
    torch.float16: {},
    torch.bfloat16: {},
}


def _x(n, dtype, device, scale=3.0):
    """Values both sides of 0, and far enough below it that e^x - 1 reaches -1."""
    return (torch.randn(n, device=device) * scale).to(dtype)


def _aten_backward(grad_out, x, alpha):
    """PyTorch's own ELU gradient kernel, as F.elu's autograd calls it (from the input, not the output)."""
    return torch.ops.aten.elu_backward(grad_out, alpha, 1, 1, False, x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_forward_matches_torch(device, dtype, n):
    x = _x(n, dtype, device)
    y = ops.elu(x)
    assert y.dtype == dtype and y.shape == x.shape and y.device == x.device
    torch.testing.assert_close(y, F.elu(x), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_backward_matches_torch(device, dtype, n):
    """The gradient through autograd, against F.elu's autograd on the same input and incoming gradient."""
    x = _x(n, dtype, device).requires_grad_()
    grad_out = _x(n, dtype, device, scale=1.0)
    (ours,) = torch.autograd.grad(ops.elu(x, 0.8), x, grad_out)
    (theirs,) = torch.autograd.grad(F.elu(x, 0.8), x, grad_out)
    torch.testing.assert_close(ours, theirs, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_op_matches_aten(device, dtype):
    x, grad_out = _x(10007, dtype, device), _x(10007, dtype, device, scale=1.0)
    torch.testing.assert_close(
        torch.ops.labkit.elu_backward(grad_out, x, 1.7), _aten_backward(grad_out, x, 1.7), **TOL[dtype]
    )


def _ulps_apart(a, b):
    """How many representable 16-bit values lie between a and b (same dtype, no NaN)."""

    def ordered(t):
        i = t.view(torch.int16).to(torch.int32)
        return torch.where(i < 0, -(i & 0x7FFF), i)  # -0 and +0 both map to 0

    return (ordered(a) - ordered(b)).abs()


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("alpha", [1.0, 0.25, -1.5, 2.0])
def test_every_16bit_input(device, dtype, alpha):
    """All 65536 values of the dtype (NaN, infinities and subnormals included). The 16-bit forward uses
    expm1_short, not expm1f: it must round to the same 16-bit results as F.elu."""
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32, device=device).to(torch.int16).view(dtype)
    y, reference = ops.elu(x, alpha), F.elu(x, alpha)
    torch.testing.assert_close(y, reference, equal_nan=True)
    nan = torch.isnan(reference)
    assert torch.equal(torch.isnan(y), nan)
    # the same 16-bit result as F.elu for all but a handful of inputs (where rounding to float, then to 16 bits,
    # lands differently), and never more than one ulp from the exact value (float64, rounded once)
    differ = (y != reference)[~nan].sum().item()
    assert differ <= 8, f"{differ} of 65536 results differ from F.elu's"
    exact = F.elu(x.double(), alpha).to(dtype)
    assert _ulps_apart(y[~nan], exact[~nan]).max().item() <= 1
    grad_out = torch.full_like(x, 0.75)  # NaN x: see test_nan_inf_and_zeros
    torch.testing.assert_close(
        torch.ops.labkit.elu_backward(grad_out, x, alpha)[~nan], _aten_backward(grad_out, x, alpha)[~nan]
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_inf_and_zeros(device, dtype):
    """PyTorch's formulas decide these: x > 0 for the forward (NaN stays NaN), x <= 0 for the backward, so a NaN x
    passes dy through, as aten's scalar CPU loop and its CUDA kernel do. (Its vectorised CPU loop, used for longer
    tensors, gives NaN there instead: PyTorch disagrees with itself, so NaN gradients are compared to dy directly.)"""
    x = torch.tensor(
        [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-30, -1e-30, -100.0, 100.0] * 3, device=device
    ).to(dtype)
    torch.testing.assert_close(ops.elu(x, 0.5), F.elu(x, 0.5), equal_nan=True, **TOL[dtype])
    grad_out = torch.full_like(x, 2.0)
    ours, nan = torch.ops.labkit.elu_backward(grad_out, x, 0.5), torch.isnan(x)
    torch.testing.assert_close(ours[~nan], _aten_backward(grad_out, x, 0.5)[~nan], **TOL[dtype])
    assert torch.equal(ours[nan], grad_out[nan])


@pytest.mark.parametrize("alpha", [0.5, 2.0, 1e-3, -1.0, 0.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_alpha(device, dtype, alpha):
    """alpha scales the negative side; negative and zero alphas are allowed (F.elu allows them too)."""
    x = _x(4099, dtype, device).requires_grad_()
    torch.testing.assert_close(ops.elu(x, alpha), F.elu(x, alpha), **TOL[dtype])
    grad_out = torch.randn_like(x)
    (ours,) = torch.autograd.grad(ops.elu(x, alpha), x, grad_out)
    (theirs,) = torch.autograd.grad(F.elu(x, alpha), x, grad_out)
    torch.testing.assert_close(ours, theirs, **TOL[dtype])


def test_alpha_is_a_keyword_and_defaults_to_one(device):
    x = _x(100, torch.float32, device)
    torch.testing.assert_close(ops.elu(x), F.elu(x, 1.0), **TOL[torch.float32])
    torch.testing.assert_close(ops.elu(x, alpha=3), F.elu(x, alpha=3.0), **TOL[torch.float32])  # an int is a number
    torch.testing.assert_close(torch.ops.labkit.elu(x), F.elu(x), **TOL[torch.float32])  # the schema's default


def test_large(device):
    for dtype in (torch.float32, torch.bfloat16):
        x = _x((1 << 24) + 3, dtype, device)
        torch.testing.assert_close(ops.elu(x, 0.9), F.elu(x, 0.9), **TOL[dtype])


def test_any_shape_and_views(device):
    x = torch.randn(6, 5, 4, device=device).permute(2, 1, 0)  # not contiguous
    y = ops.elu(x, 0.5)
    assert y.shape == (4, 5, 6) and y.is_contiguous()
    torch.testing.assert_close(y, F.elu(x, 0.5), **TOL[torch.float32])
    z = torch.randn(1001, device=device)
    # contiguous but 4 bytes past a 16-byte boundary: the vector kernel must not be used on it
    torch.testing.assert_close(ops.elu(z[1:]), F.elu(z[1:]), **TOL[torch.float32])
    torch.testing.assert_close(ops.elu(z[::3]), F.elu(z[::3]), **TOL[torch.float32])  # strided
    e = torch.randn(7, 1, device=device).expand(7, 9)  # stride 0
    torch.testing.assert_close(ops.elu(e), F.elu(e), **TOL[torch.float32])
    s = torch.tensor(-0.5, device=device)  # a 0-d tensor
    torch.testing.assert_close(ops.elu(s), F.elu(s), **TOL[torch.float32])
    cl = torch.randn(2, 3, 4, 5, device=device).to(memory_format=torch.channels_last)
    torch.testing.assert_close(ops.elu(cl), F.elu(cl), **TOL[torch.float32])


def test_backward_with_views(device):
    """Gradients that arrive as views: y.sum()'s is a stride-0 expansion, a transpose's is permuted."""
    x = torch.randn(33, 17, device=device, requires_grad=True)
    (ours,) = torch.autograd.grad(ops.elu(x.t(), 0.3).sum(), x)
    (theirs,) = torch.autograd.grad(F.elu(x.t(), 0.3).sum(), x)
    torch.testing.assert_close(ours, theirs, **TOL[torch.float32])
    g = torch.randn(17, 33, device=device).t()
    torch.testing.assert_close(
        torch.ops.labkit.elu_backward(g, x.detach(), 0.3), _aten_backward(g, x.detach(), 0.3), **TOL[torch.float32]
    )
    h = torch.randn(1001, device=device)
    torch.testing.assert_close(
        torch.ops.labkit.elu_backward(h[1:], h[:-1], 0.3), _aten_backward(h[1:], h[:-1], 0.3), **TOL[torch.float32]
    )  # misaligned: the scalar backward kernel


def test_backward_runs_our_backward_kernel():
    """autograd's gradient of ops.elu is labkit::elu_backward (ours), not a PyTorch formula."""
    x = torch.randn(100, requires_grad=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        ops.elu(x, 0.5).sum().backward()
    names = {e.name for e in prof.events()}
    assert "labkit::elu_backward" in names
    assert not {"aten::elu_backward", "aten::elu"} & names


def _away_from_zero(x):
    """gradcheck compares with finite differences, which are wrong within eps of the kink at 0."""
    return torch.where(x.abs() < 1e-3, torch.full_like(x, 0.5), x)


def test_gradcheck(device):
    x = _away_from_zero(torch.randn(29, device=device, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: ops.elu(t, 0.7), (x,))
    assert torch.autograd.gradgradcheck(lambda t: ops.elu(t, 0.7), (x,))
    g = torch.randn(29, device=device, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: torch.ops.labkit.elu_backward(a, b, 0.7), (g, x))


def test_opcheck(device):
    x = torch.randn(37, device=device)
    g = torch.randn(37, device=device)
    torch.library.opcheck(torch.ops.labkit.elu.default, (x, 0.5))
    torch.library.opcheck(torch.ops.labkit.elu.default, (x.clone().requires_grad_(), 0.5))
    torch.library.opcheck(torch.ops.labkit.elu.default, (x.bfloat16(), 2.0))
    torch.library.opcheck(torch.ops.labkit.elu_backward.default, (g, x, 0.5))
    torch.library.opcheck(
        torch.ops.labkit.elu_backward.default, (g.clone().requires_grad_(), x.clone().requires_grad_(), 0.5)
    )
    if device == "cuda":
        torch.library.opcheck(torch.ops.labkit.elu_seed.default, (x,))
        torch.library.opcheck(torch.ops.labkit.elu_seed_smem.default, (x,))


def test_torch_compile_fullgraph_forward_and_backward(device):
    """fullgraph=True fails on any graph break; the compiled backward must run our backward kernel too."""
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(t):
        return ops.elu(t * 2, 0.6).sum()

    x = torch.randn(1000, device=device, requires_grad=True)
    out = f(x)
    torch.testing.assert_close(out, F.elu(x * 2, 0.6).sum(), rtol=1e-5, atol=1e-4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out.backward()
    assert "labkit::elu_backward" in {e.name for e in prof.events()}
    (expected,) = torch.autograd.grad(F.elu(x * 2, 0.6).sum(), x)
    torch.testing.assert_close(x.grad, expected, **TOL[torch.float32])


def test_live_rebuild_of_the_cpu_kernel(kit_copy, capsys):
    """Edit elu's CPU kernel in a copy of the kit: the next call rebuilds that file only and runs the new code."""
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    x = torch.linspace(-3, 3, 101)
    torch.testing.assert_close(lab.elu(x), F.elu(x), **TOL[torch.float32])
    capsys.readouterr()
    edit(
        kit_copy / "kernels/elu/elu_cpu.cpp", "v > 0 ? v : a * expm1_for<T>(v)", "v > 0 ? 10 * v : a * expm1_for<T>(v)"
    )
    y = lab.elu(x)
    torch.testing.assert_close(y, torch.where(x > 0, 10 * x, F.elu(x)), **TOL[torch.float32])
    status = [ln for ln in capsys.readouterr().out.splitlines() if "[labkit] elu" in ln]
    assert status and status[-1].endswith("compiled elu_cpu.cpp"), status
    # the kit's own ops.elu shares the operator name; calling it takes the op back
    torch.testing.assert_close(ops.elu(x), F.elu(x), **TOL[torch.float32])


# -- the ELU tutorial's kernels --------------------------------------------------------------------------------------


def test_unknown_version():
    with pytest.raises(ValueError, match="version must be one of 'fast', 'seed', 'seed_smem', got 'turbo'"):
        ops.elu(torch.randn(3), version="turbo")


@pytest.mark.parametrize("version", ["seed", "seed_smem"])
def test_seed_versions_have_no_cpu_path_and_alpha_one(version):
    with pytest.raises(
        RuntimeError, match=f'version="{version}"\\) is the ELU tutorial\'s CUDA kernel and has no CPU version'
    ):
        ops.elu(torch.randn(3), version=version)
    with pytest.raises(ValueError, match="alpha is fixed at 1.0"):
        ops.elu(torch.randn(3), 0.5, version=version)


@pytest.mark.cuda
@pytest.mark.parametrize("version", ["seed", "seed_smem"])
@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1000, (1 << 20) + 3])
def test_seed_versions(version, n):
    """Both of the tutorial's kernels give F.elu's results, including a partial last block (the smem kernel's barriers)."""
    x = _x(n, torch.float32, "cuda")
    # the tutorial computes expf(x) - 1, which loses digits near 0: the default float32 tolerance, not ours
    torch.testing.assert_close(ops.elu(x, version=version), F.elu(x))
    with pytest.raises(TypeError, match="float32 only"):
        ops.elu(x.double(), version=version)


# -- bad input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, error, match",
    [
        (torch.arange(3), TypeError, "elu: x must be a floating-point tensor .* but got Long"),
        (torch.ones(3, dtype=torch.bool), TypeError, "elu: x must be a floating-point tensor .* but got Bool"),
        (
            torch.ones(3, dtype=torch.complex64),
            TypeError,
            "elu: x must be a floating-point tensor .* but got ComplexFloat",
        ),
        ([1.0, -1.0], RuntimeError, "Expected a value of type 'Tensor' for argument 'x'"),
    ],
)
def test_bad_x(x, error, match):
    with pytest.raises(error, match=match):
        ops.elu(x)


@pytest.mark.parametrize("alpha", ["1.0", None, 1 + 2j, [1.0]])
def test_alpha_of_the_wrong_type(alpha):
    """The schema says `float alpha`, so the dispatcher refuses anything else and names the argument."""
    with pytest.raises(RuntimeError, match="for argument 'alpha'"):
        ops.elu(torch.randn(3), alpha)


@pytest.mark.parametrize(
    "grad_out, x, error, match",
    [
        (
            torch.randn(3),
            torch.randn(4),
            ValueError,
            r"elu_backward: grad_out and x must have the same shape, but grad_out has shape \[3\] and x has shape \[4\]",
        ),
        (torch.randn(3), torch.randn(3, dtype=torch.float64), TypeError, "grad_out and x must have the same dtype"),
        (torch.arange(3), torch.arange(3), TypeError, "elu_backward: x must be a floating-point tensor"),
    ],
)
def test_bad_backward_inputs(grad_out, x, error, match):
    with pytest.raises(error, match=match):
        torch.ops.labkit.elu_backward(grad_out, x, 1.0)


@pytest.mark.cuda
def test_cpu_tensor_with_cuda_tensor():
    for g, x in [(torch.randn(3), torch.randn(3, device="cuda")), (torch.randn(3, device="cuda"), torch.randn(3))]:
        with pytest.raises(RuntimeError, match="grad_out and x must be on the same device, but grad_out is on"):
            torch.ops.labkit.elu_backward(g, x, 1.0)


@pytest.mark.gpu2
def test_tensors_on_different_gpus():
    with pytest.raises(RuntimeError, match="grad_out is on cuda:0 and x is on cuda:1"):
        torch.ops.labkit.elu_backward(torch.randn(3, device="cuda:0"), torch.randn(3, device="cuda:1"), 1.0)


@pytest.mark.cuda
def test_runs_on_the_inputs_gpu_and_current_stream():
    """The result is ordered on the current stream: work queued before on a side stream is seen."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.randn(1 << 22, device="cuda")
        y = ops.elu(x, 0.5)
        g = torch.ops.labkit.elu_backward(y, x, 0.5)
        expected_y = F.elu(x, 0.5)
        expected_g = _aten_backward(expected_y, x, 0.5)
    s.synchronize()
    torch.testing.assert_close(y, expected_y, **TOL[torch.float32])
    torch.testing.assert_close(g, expected_g, **TOL[torch.float32])
    if N_GPUS >= 2:
        with torch.cuda.device(0):
            z = torch.randn(1000, device="cuda:1")
            torch.testing.assert_close(ops.elu(z), F.elu(z), **TOL[torch.float32])


@pytest.mark.cuda
@pytest.mark.parametrize("n", [5, 4096 + 3, (1 << 22) + 1])
def test_float32_is_bit_identical_to_F_elu_on_the_gpu(n):
    """On the GPU both sides compute x > 0 ? x : alpha * expm1f(x) with CUDA's expm1f: the same bits, not just close
    ones. (The gradient too: dy * alpha * expf(x), multiplied in PyTorch's order.)"""
    x, grad_out = _x(n, torch.float32, "cuda"), _x(n, torch.float32, "cuda", scale=1.0)
    assert torch.equal(ops.elu(x, 0.7), F.elu(x, 0.7))
    assert torch.equal(torch.ops.labkit.elu_backward(grad_out, x, 0.7), _aten_backward(grad_out, x, 0.7))


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_16bit_results_are_the_same_bits_on_cpu_and_gpu(dtype):
    """expm1_short is only fmaf, + and *: the CPU (tested everywhere, CI included) stands in for the GPU exactly."""
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)
    gpu, cpu = ops.elu(x.cuda(), -0.75).cpu(), ops.elu(x, -0.75)
    nan = torch.isnan(cpu)  # NaN's bits differ by design (the GPU writes one canonical NaN): compared as NaN
    assert torch.equal(torch.isnan(gpu), nan)
    assert torch.equal(gpu[~nan].view(torch.int16), cpu[~nan].view(torch.int16))


@pytest.mark.cuda
@pytest.mark.big_gpu_memory
def test_past_2_to_the_31_elements():
    n = (1 << 31) + 5  # 8 GiB per float32 tensor: int indices would wrap
    if torch.cuda.mem_get_info()[0] < 3 * n * 4:
        pytest.skip("needs 26 GB of free GPU memory")
    x = torch.full((n,), -1.0, device="cuda")
    x[-1] = 2.0
    y = ops.elu(x)
    assert y[-1].item() == 2.0 and y[-6].item() == pytest.approx(-0.6321205588), "elu missed elements past 2^31"
    assert bool((y[:-1] == y[0]).all())
    del y
    with pytest.raises(ValueError, match="at most 2\\^31 - 1 elements"):
        ops.elu(x, version="seed")
