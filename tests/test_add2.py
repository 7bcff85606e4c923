"""ops.add2 against PyTorch's own a + b: every dtype, awkward sizes, views, out=, and every bad input."""

import pytest
import torch
from conftest import N_GPUS

from loader import ops

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
# 0 and 1; below, at and past a 16-byte pack (8 halves) and a 256-thread block; a large one
SIZES = [0, 1, 3, 7, 8, 9, 1023, 1024, 1025, 256 * 8 + 5, (1 << 20) + 3]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_matches_torch(device, dtype, n):
    a = torch.randn(n, device=device).to(dtype)
    b = torch.randn(n, device=device).to(dtype)
    # PyTorch adds 16-bit floats in float32 and rounds once, as we do: the results are identical
    torch.testing.assert_close(ops.add2(a, b), a + b, rtol=0, atol=0)


def test_large(device):
    n = (1 << 24) + 3
    a, b = torch.randn(n, device=device), torch.randn(n, device=device)
    assert torch.equal(ops.add2(a, b), a + b)


def test_any_shape_and_views(device):
    a = torch.randn(4, 5, 6, device=device)
    b = torch.randn(6, 5, 4, device=device).permute(2, 1, 0)  # not contiguous
    torch.testing.assert_close(ops.add2(a, b), a + b, rtol=0, atol=0)
    x = torch.randn(1001, device=device)
    # contiguous but 4 bytes past a 16-byte boundary: the vector kernel must not be used on it
    torch.testing.assert_close(ops.add2(x[1:], x[:-1]), x[1:] + x[:-1], rtol=0, atol=0)
    assert ops.add2(a, b).shape == (4, 5, 6)


def test_out(device):
    a, b = torch.randn(1000, device=device), torch.randn(1000, device=device)
    c = torch.empty(1000, device=device)
    assert ops.add2(a, b, out=c) is c
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    expected = a + b
    ops.add2(a, b, out=a)  # in place: each element reads before it writes
    torch.testing.assert_close(a, expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    "bad_out, match",
    [
        (lambda d: torch.empty(999, device=d), "out must have the inputs' shape"),
        (lambda d: torch.empty(1000, device=d, dtype=torch.float64), "out and the inputs must have the same dtype"),
        (lambda d: torch.empty(2000, device=d)[::2], "out must be contiguous"),
    ],
)
def test_bad_out(device, bad_out, match):
    a, b = torch.randn(1000, device=device), torch.randn(1000, device=device)
    with pytest.raises((RuntimeError, ValueError, TypeError), match=match):
        ops.add2(a, b, out=bad_out(device))


def test_out_partly_overlapping_an_input(device):
    x = torch.randn(1001, device=device)
    with pytest.raises(ValueError, match="out partly overlaps an input"):
        ops.add2(x[:-1], x[:-1], out=x[1:])


@pytest.mark.cuda
def test_out_on_another_device():
    a, b = torch.randn(10, device="cuda"), torch.randn(10, device="cuda")
    with pytest.raises(RuntimeError, match="out and the inputs must be on the same device"):
        ops.add2(a, b, out=torch.empty(10))


@pytest.mark.parametrize(
    "a, b, error, match",
    [
        (
            torch.randn(3),
            torch.randn(4),
            ValueError,
            r"a and b must have the same shape, but a has shape \[3\] and b has shape \[4\]",
        ),
        (torch.randn(3), torch.randn(3, dtype=torch.float64), TypeError, "a and b must have the same dtype"),
        (torch.arange(3), torch.arange(3), TypeError, "a must be a floating-point tensor .* but got Long"),
        (
            torch.ones(3, dtype=torch.bool),
            torch.ones(3, dtype=torch.bool),
            TypeError,
            "a must be a floating-point tensor",
        ),
        (torch.randn(3), 3.0, RuntimeError, "argument 'b'"),
    ],
)
def test_bad_inputs(a, b, error, match):
    with pytest.raises(error, match=match):
        ops.add2(a, b)


@pytest.mark.cuda
def test_cpu_tensor_with_cuda_tensor():
    for a, b in [(torch.randn(3), torch.randn(3, device="cuda")), (torch.randn(3, device="cuda"), torch.randn(3))]:
        with pytest.raises(RuntimeError, match="a and b must be on the same device, but a is on"):
            ops.add2(a, b)


@pytest.mark.gpu2
def test_tensors_on_different_gpus():
    with pytest.raises(RuntimeError, match="a is on cuda:0 and b is on cuda:1"):
        ops.add2(torch.randn(3, device="cuda:0"), torch.randn(3, device="cuda:1"))


def test_unknown_version():
    with pytest.raises(ValueError, match='version must be "fast", .seed.'):
        ops.add2(torch.randn(3), torch.randn(3), version="turbo")


def test_seed_version_has_no_cpu_path():
    with pytest.raises(RuntimeError, match="add2 tutorial's CUDA kernel and has no CPU version"):
        ops.add2(torch.randn(3), torch.randn(3), version="seed")


@pytest.mark.cuda
@pytest.mark.parametrize("n", [0, 1, 1023, 1025, (1 << 20) + 3])
def test_seed_version(n):
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    torch.testing.assert_close(ops.add2(a, b, version="seed"), a + b, rtol=0, atol=0)
    with pytest.raises(TypeError, match="float32 only"):
        ops.add2(a.double(), b.double(), version="seed")


@pytest.mark.cuda
@pytest.mark.big_gpu_memory
def test_past_2_to_the_31_elements():
    n = (1 << 31) + 5  # 8 GiB per float32 tensor: int indices would wrap
    if torch.cuda.mem_get_info()[0] < 5 * n * 4:
        pytest.skip("needs 43 GB of free GPU memory")
    a = torch.ones(n, device="cuda")
    b = torch.full((n,), 2.0, device="cuda")
    c = ops.add2(a, b)
    assert bool((c == 3).all()), "add2 missed elements past 2^31"
    del c
    with pytest.raises(ValueError, match="at most 2\\^31 - 1 elements"):
        ops.add2(a, b, version="seed")


@pytest.mark.cuda
def test_runs_on_the_inputs_gpu_and_current_stream():
    """The result is ordered on the current stream: work queued before on a side stream is seen."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.randn(1 << 22, device="cuda")
        b = torch.randn(1 << 22, device="cuda")
        c = ops.add2(a, b)
        expected = a + b
    s.synchronize()
    assert torch.equal(c, expected)
    if N_GPUS >= 2:
        with torch.cuda.device(0):
            x = torch.randn(1000, device="cuda:1")
            assert torch.equal(ops.add2(x, x), x + x)


def test_opcheck(device):
    a, b = torch.randn(37, device=device), torch.randn(37, device=device)
    torch.library.opcheck(torch.ops.labkit.add2.default, (a, b))
    torch.library.opcheck(torch.ops.labkit.add2.default, (a.requires_grad_(), b.requires_grad_()))
    torch.library.opcheck(torch.ops.labkit.add2_out.default, (a.detach(), b.detach(), torch.empty_like(a)))
    if device == "cuda":
        torch.library.opcheck(torch.ops.labkit.add2_seed.default, (a.detach(), b.detach()))


def test_gradients(device):
    a = torch.randn(9, device=device, dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, device=device, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, y: ops.add2(x, y), (a, b))


def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(x, y):
        return ops.add2(x, y) * 2

    a, b = torch.randn(100, device=device), torch.randn(100, device=device)
    torch.testing.assert_close(f(a, b), (a + b) * 2)
