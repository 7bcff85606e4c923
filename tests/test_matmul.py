"""ops.matmul against torch.matmul of float64 copies (of the same values): every dtype, awkward shapes (1, 7, 33, 127,
129, 257, 1000 and empty ones), transposed views, bad input, gradients, opcheck, torch.compile; on a GPU also every
one of the lesson's versions, the current stream, and compute-sanitizer's memcheck and racecheck."""

import pytest
import torch
from conftest import DEVICES, assert_sanitizer_clean

from kit import resources
from loader import ops

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
ACC_EPS = {torch.float32: 2.0**-24, torch.float16: 2.0**-24, torch.bfloat16: 2.0**-24, torch.float64: 2.0**-53}
OUT_EPS = {torch.float32: 0.0, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float64: 0.0}
# (M, N, K): ones, odd sizes around the tiles (32, 64, 128), K = 0 and empty outputs, and one large side
SHAPES = [
    (1, 1, 1),
    (7, 7, 7),
    (1, 33, 7),
    (33, 1, 129),
    (7, 129, 33),
    (127, 33, 129),
    (129, 127, 1),
    (33, 257, 127),
    (257, 7, 33),
    (1000, 7, 33),
    (7, 1000, 129),
    (33, 7, 1000),
    (5, 6, 0),
    (0, 7, 33),
    (7, 0, 33),
    (0, 0, 0),
]
GPU_SHAPES = SHAPES + [(127, 129, 257), (257, 1000, 129), (1000, 1000, 1000), (129, 257, 1000), (1000, 33, 257)]
F32_VERSIONS = ["naive", "coalesced", "smem", "reg1d", "reg2d", "vec", "warptile", "pipelined"]
HOPPER_VERSIONS = ["wgmma", "warpspec", "wide", "persistent", "tall"]
# Single rows and columns, every edge of the 128 x 128, 128 x 256 and 256 x 128 tiles, K shorter than one 64-deep slot
# and longer than the ring, 153 tiles of 128 x 256 (more than an H200's 132 SMs, so the persistent kernels' blocks take
# a second tile), K or N no multiple of 8 (TMA cannot read such rows: the binding pads a copy; of A alone, 1001, or of B
# alone, 131; versions 9-12 read an A with rows enough through eight tensor maps, one per row mod 8: 2047 and 1000
# rows, K of 125 taking one 64-deep step more in the maps whose rows start late in their 16 bytes), and an odd N over
# several tiles (C's rows start at every offset within 16 bytes, so the stores' aligned pieces shift across each
# tile's edges), and N a few columns past a multiple of the tile's width (a narrow last tile column: 264, 136, 2056,
# 1032, 4097), in the persistent kernels over more tiles than SMs, as many full tiles as an H200 has SMs (33 x 4 of
# 128 x 256) included; the persistent 128 x 256 kernel's narrow tiles are two tile rows each, so an odd number of
# tile rows leaves the last alone (127, 257, 2049, 893 rows, the last over more tiles than SMs), and through A's eight
# residue maps a pair never spans two maps (1000, 2047 and 3071 rows: 1, 2 and 3 tile rows per map); and odd M, N, K
# over several waves and a K over several passes of the ring (both inputs unaligned)
HOPPER_SHAPES = [
    (1, 8, 8),
    (7, 64, 16),
    (129, 136, 72),
    (127, 264, 1000),
    (257, 520, 64),
    (1000, 1000, 1000),
    (300, 8, 4096),
    (2049, 2056, 72),
    (33, 2056, 520),
    (1, 1, 1),
    (33, 257, 130),
    (129, 131, 1000),
    (200, 520, 1001),
    (301, 385, 203),
    (4224, 1032, 64),
    (4095, 4097, 72),
    (2047, 4097, 1031),
    (1000, 264, 125),
    (3071, 1032, 131),
    (893, 9477, 24),
]


def on_hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def assert_matmul_close(got, a, b):
    """got against torch.matmul of the float64 values. Adding K products in the accumulator errs by at most
    ~K eps (|A| @ |B|) elementwise (eps of float, or of double); the bound allows 2K + 8 such steps (tensor cores may
    truncate rather than round). Then one rounding to a 16-bit output: half an ulp of the result, or of the smallest
    normal number for subnormal results (float16's start at 6e-5, where products of two randn values land)."""
    ref = a.double() @ b.double()
    mag = a.double().abs() @ b.double().abs()
    steps = 2 * a.shape[1] + 8
    tiny = torch.finfo(a.dtype).smallest_normal
    bound = steps * ACC_EPS[a.dtype] * mag + OUT_EPS[a.dtype] * ref.abs().clamp(min=tiny) + 1e-300
    assert got.dtype == a.dtype and got.shape == ref.shape and got.device == a.device, (got.dtype, got.shape)
    err = (got.double() - ref).abs()
    assert bool((err <= bound).all()), f"worst error {float((err - bound).max()):.3g} past the bound"


def _ab(m, n, k, dtype, device):
    return torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk", SHAPES, ids=str)
def test_matmul(device, dtype, mnk):
    a, b = _ab(*mnk, dtype, device)
    assert_matmul_close(ops.matmul(a, b), a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_k_zero_gives_zeros(device, dtype):
    c = ops.matmul(torch.empty(4, 0, dtype=dtype, device=device), torch.empty(0, 3, dtype=dtype, device=device))
    assert c.shape == (4, 3) and c.dtype == dtype and bool((c == 0).all())


@pytest.mark.parametrize("device", DEVICES)
def test_transposed_and_sliced_views(device):
    base_a, base_b = torch.randn(129, 70, device=device), torch.randn(70, 33, device=device)
    for a, b in [
        (base_a.t()[:, :33], base_b.t()[:, :70]),
        (base_a[:, 1:34], base_b[1:34]),
        (base_a[::2, :70], base_b[:, ::2]),
        (base_a[1:, 1:], base_b[1:]),
    ]:
        assert not (a.is_contiguous() and b.is_contiguous()) or a.data_ptr() % 16 or b.data_ptr() % 16
        assert_matmul_close(ops.matmul(a, b), a, b)


@pytest.mark.parametrize(
    "a, b, error, match",
    [
        (
            torch.ones(2, 3),
            torch.ones(4, 5),
            ValueError,
            r"a's columns must match b's rows \(a is M x K, b is K x N\), but a has shape \[2, 3\] and b has shape \[4, 5\]",
        ),
        (
            torch.ones(3),
            torch.ones(3, 2),
            ValueError,
            r"must be 2-D matrices, but a has shape \[3\] and b has shape \[3, 2\]",
        ),
        (torch.ones(2, 3, 4), torch.ones(4, 5), ValueError, r"a has shape \[2, 3, 4\] and b has shape \[4, 5\]"),
        (torch.ones(2, 3), torch.ones(3), ValueError, r"b has shape \[3\]"),
        (
            torch.ones(2, 3, dtype=torch.int64),
            torch.ones(3, 2, dtype=torch.int64),
            TypeError,
            "a must be a floating-point tensor .* got Long",
        ),
        (
            torch.ones(2, 3),
            torch.ones(3, 2, dtype=torch.int32),
            TypeError,
            "b must be a floating-point tensor .* got Int",
        ),
        (
            torch.ones(2, 3),
            torch.ones(3, 2, dtype=torch.float64),
            TypeError,
            "a and b must have the same dtype, but a is Float and b is Double",
        ),
    ],
)
def test_bad_input_names_the_argument(a, b, error, match):
    with pytest.raises(error, match=match):
        ops.matmul(a, b)


def test_the_fake_kernel_checks_like_the_binding():
    """On the meta device (no data) only the fake kernel runs: torch.compile's view of the op."""
    with pytest.raises(RuntimeError, match=r"but a has shape \[2, 3\] and b has shape \[4, 5\]"):
        ops.matmul(torch.ones(2, 3, device="meta"), torch.ones(4, 5, device="meta"))
    with pytest.raises(RuntimeError, match="must be 2-D matrices"):
        ops.matmul(torch.ones(3, device="meta"), torch.ones(3, 2, device="meta"))
    with pytest.raises(RuntimeError, match="a must be a floating-point tensor"):
        ops.matmul(torch.ones(2, 3, dtype=torch.int64, device="meta"), torch.ones(3, 2, device="meta"))
    out = ops.matmul(
        torch.ones(2, 3, device="meta", dtype=torch.bfloat16), torch.ones(3, 7, device="meta", dtype=torch.bfloat16)
    )
    assert out.shape == (2, 7) and out.dtype == torch.bfloat16


def test_bad_version():
    with pytest.raises(ValueError, match="version must be \"fast\" or one of 'naive'"):
        ops.matmul(torch.ones(3, 3), torch.ones(3, 3), version="tiled")
    with pytest.raises(RuntimeError, match="no CPU version"):
        ops.matmul(torch.ones(3, 3), torch.ones(3, 3), version="naive")
    with pytest.raises(RuntimeError, match="no CPU version"):
        ops.matmul(torch.ones(3, 3), torch.ones(3, 3), version="splitk")


def test_the_cpu_kernel_splits_nothing():
    a, b = _ab(8, 8, 8192, torch.float32, "cpu")
    assert ops.matmul(a, b, splits=True) == 1 and ops.matmul(a, b, which=True) == "cpu"


@pytest.mark.parametrize("device", DEVICES)
def test_gradients(device):
    a = torch.randn(5, 7, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.randn(7, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(ops.matmul, (a, b))
    assert torch.autograd.gradgradcheck(ops.matmul, (a, b))
    assert torch.autograd.gradcheck(lambda x, y: ops.matmul(x.t(), y), (a.detach().t().clone().requires_grad_(), b))
    (ga,) = torch.autograd.grad(ops.matmul(a, b.detach()).sum(), a)  # only a needs a gradient
    torch.testing.assert_close(ga, torch.ones(5, 3, dtype=torch.float64, device=device) @ b.detach().t())
    x = torch.randn(6, 9, device=device, dtype=torch.bfloat16, requires_grad=True)
    y = torch.randn(9, 4, device=device, dtype=torch.bfloat16, requires_grad=True)
    gx, gy = torch.autograd.grad(ops.matmul(x, y).sum(), (x, y))
    assert gx.dtype == gy.dtype == torch.bfloat16 and gx.shape == x.shape and gy.shape == y.shape


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    ops.matmul(*_ab(1, 1, 1, torch.float32, device))  # the loader defines torch.ops.labkit.matmul on first use
    for dtype, rg in [(torch.float32, False), (torch.float32, True), (torch.float64, True), (torch.bfloat16, False)]:
        a, b = _ab(7, 33, 5, dtype, device)
        torch.library.opcheck(torch.ops.labkit.matmul.default, (a.requires_grad_(rg), b.requires_grad_(rg)))
    if device == "cuda":
        a, b = _ab(7, 33, 5, torch.float32, device)
        torch.library.opcheck(torch.ops.labkit.matmul_version.default, (a, b, 6))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_forward_and_backward(device):
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(x, w1, w2):
        return ops.matmul(torch.relu(ops.matmul(x, w1)), w2).sum()

    x, w1, w2 = (torch.randn(s, device=device, requires_grad=True) for s in [(9, 17), (17, 33), (33, 5)])
    out = f(x, w1, w2)
    xd, w1d, w2d = (t.detach().double().requires_grad_() for t in (x, w1, w2))
    expected = (torch.relu(xd @ w1d) @ w2d).sum()
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-4)
    out.backward()
    expected.backward()
    for t, td in ((x, xd), (w1, w1d), (w2, w2d)):
        torch.testing.assert_close(t.grad.double(), td.grad, rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# GPU only


@pytest.mark.cuda
@pytest.mark.parametrize("version", F32_VERSIONS)
@pytest.mark.parametrize("mnk", GPU_SHAPES, ids=str)
def test_the_lessons_float32_versions(version, mnk):
    a, b = _ab(*mnk, torch.float32, "cuda")
    assert_matmul_close(ops.matmul(a, b, version=version), a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mnk", GPU_SHAPES, ids=str)
def test_the_tensor_core_version(dtype, mnk):
    a, b = _ab(*mnk, dtype, "cuda")
    assert_matmul_close(ops.matmul(a, b, version="wmma"), a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk", GPU_SHAPES, ids=str)
def test_fast_on_the_gpu(dtype, mnk):
    a, b = _ab(*mnk, dtype, "cuda")
    assert_matmul_close(ops.matmul(a, b), a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("version", F32_VERSIONS + ["wmma", "fast"] + (HOPPER_VERSIONS if on_hopper() else []))
def test_versions_on_views_and_unaligned_starts(version):
    """Views, made contiguous by the binding, and contiguous tensors that start 2 or 4 bytes into their storage:
    K and N (128, 264) are multiples of 8, so only the alignment of a or of b keeps the 16-byte loads away (and, for
    the Hopper versions, TMA: the binding copies such inputs into rows it can read). Last, slices of wider matrices
    whose rows TMA can read where they are (136 and 272 elements apart): the Hopper versions read them uncopied."""
    dtype = torch.float32 if version in F32_VERSIONS + ["fast"] else torch.bfloat16
    base_a, base_b = _ab(300, 264, 130, dtype, "cuda")
    flat_a, flat_b = base_a.view(-1), base_b.view(-1)
    wide_a, wide_b = _ab(72, 272, 136, dtype, "cuda")
    for a, b in [
        (wide_a[8:, :128], wide_b[:128, :264]),
        (base_a[1:, 1:129], base_b[1:129, 3:]),
        (base_b.t()[:, :129], base_a.t()[:129]),
        (flat_a[1 : 1 + 64 * 128].view(64, 128), flat_b[: 128 * 264].view(128, 264)),
        (flat_a[: 64 * 128].view(64, 128), flat_b[1 : 1 + 128 * 264].view(128, 264)),
    ]:
        assert_matmul_close(ops.matmul(a, b, version=version), a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("version", F32_VERSIONS + ["wmma", "fast"])
def test_a_c_taller_than_one_grid(version):
    """gridDim.y (row tiles) stops at 65535: one row more than 65535 tiles of the tallest tile (128) is past one
    grid for every version. matmul.cu launches it as 5 chunks of rows (the last of 385), each starting on a tile
    boundary with its rows still 16-byte aligned (K and N multiples of 8). 270 MB of float32 inputs."""
    dtype = torch.bfloat16 if version == "wmma" else torch.float32
    a, b = _ab(65535 * 128 + 1, 8, 8, dtype, "cuda")
    assert_matmul_close(ops.matmul(a, b, version=version), a, b)


@pytest.mark.cuda
@pytest.mark.skipif(not on_hopper(), reason="versions 8-11 need a Hopper GPU (compute capability 9.0)")
@pytest.mark.parametrize("version", HOPPER_VERSIONS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mnk", HOPPER_SHAPES, ids=str)
def test_the_hopper_versions(version, dtype, mnk):
    a, b = _ab(*mnk, dtype, "cuda")
    assert_matmul_close(ops.matmul(a, b, version=version), a, b)


@pytest.mark.cuda
@pytest.mark.skipif(not on_hopper(), reason="the Hopper versions need a Hopper GPU (compute capability 9.0)")
@pytest.mark.parametrize("offset", range(8))
def test_hopper_padding_at_every_alignment(offset):
    """Rows TMA cannot read are copied into padded ones in 16-byte pieces, shifted by the row's alignment
    (matmul_pad_rows), for every Hopper version (each reads what the copy wrote): rows of odd length
    start at every one of the 8 alignments a 2-byte element can have, the first row at `offset`, and the last pack of
    a row ends mid-piece."""
    for dtype in (torch.float16, torch.bfloat16):
        flat = torch.randn(offset + 37 * 131 + 131 * 77, device="cuda").to(dtype)
        a = flat[offset : offset + 37 * 131].view(37, 131)
        b = flat[offset + 37 * 131 :].view(131, 77)
        for version in HOPPER_VERSIONS:
            assert_matmul_close(ops.matmul(a, b, version=version), a, b)
        assert_matmul_close(ops.matmul(a, b), a, b)


@pytest.mark.cuda
@pytest.mark.skipif(not on_hopper(), reason="the Hopper versions need a Hopper GPU (compute capability 9.0)")
def test_hopper_residue_maps_read_a_where_it_is():
    """Versions 9-12 read an A whose rows TMA cannot read where they are through eight tensor maps, one per row mod 8,
    each from the 16-byte boundary before its rows (matmul_hopper.cuh's AMaps), where A has rows enough (1000 here):
    no copy of A is made, and what lies before each row's start in those 16 bytes (the end of the row before, or a
    slice's columns past its width) never reaches the product, not even an infinity, which times the zeros that
    stand for B's rows before its first would make NaN. Rows start at every alignment (125 columns) or all one
    element past a boundary (an unaligned start)."""
    for dtype in (torch.float16, torch.bfloat16):
        b = torch.randn(125, 264, device="cuda").to(dtype)
        wide = torch.randn(1000, 131, device="cuda").to(dtype)
        wide[:, 125:] = float("inf")  # past the slice's width: before the next row's start
        flat = torch.randn(1 + 1000 * 128, device="cuda").to(dtype)
        for a in (wide[:, :125], flat[1:].view(1000, 128)[:, :125], flat[1:].view(1000, 128)):
            bb = b if a.shape[1] == 125 else torch.randn(128, 264, device="cuda").to(dtype)
            for version in ("warpspec", "wide", "persistent", "tall"):
                torch.cuda.synchronize()
                before = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                got = ops.matmul(a, bb, version=version)
                extra = torch.cuda.max_memory_allocated() - before - got.numel() * got.element_size()
                if version != "tall":  # 1000 rows in 256-row tiles: 4 of one map, 8 of eight: tall copies A
                    assert extra < a.shape[0] * a.shape[1] * a.element_size(), (version, extra)
                assert_matmul_close(got, a, bb)
        # infinities at the end of every other row of a contiguous A: those rows' products are infinite or NaN, as in
        # float64, and the rows after them exact
        a = torch.randn(1000, 125, device="cuda").to(dtype)
        a[::2, -1] = float("inf")
        for version in ("warpspec", "persistent"):
            got = ops.matmul(a, b, version=version)
            assert not torch.isfinite(got[::2]).any()
            assert_matmul_close(got[1::2], a[1::2], b)


@pytest.mark.cuda
@pytest.mark.skipif(not on_hopper(), reason="the Hopper versions need a Hopper GPU (compute capability 9.0)")
def test_fast_runs_the_hopper_versions_where_they_fit():
    """The default picks the kernel whose tiles fill the SMs best: 128 x 128 ones where 128 x 256 ones would leave
    most SMs idle, one wave of 128 x 256, the persistent 128 x 256 one for several waves, 256 x 128 where that fills
    the last wave better (4096 x 4224 on 132 SMs), but not where 128 x 256 tiles leave a narrow last column, whose
    tiles the blocks of the last wave take (4096 x 4104); inputs TMA cannot read are padded, not sent elsewhere."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    big, small = _ab(4096, 4096, 4096, torch.bfloat16, "cuda"), _ab(1024, 1024, 1024, torch.float16, "cuda")
    assert ops.matmul(*big, which=True) == "persistent"
    assert ops.matmul(*small, which=True) == "warpspec"
    skinny = _ab(512, 8192, 512, torch.bfloat16, "cuda")
    assert ops.matmul(*skinny, which=True) == ("wide" if sms >= 128 else "persistent")
    if sms == 132:
        assert ops.matmul(*_ab(4096, 4224, 64, torch.bfloat16, "cuda"), which=True) == "tall"
        assert ops.matmul(*_ab(4096, 4104, 64, torch.bfloat16, "cuda"), which=True) == "persistent"
    odd_k = _ab(256, 256, 130, torch.bfloat16, "cuda")
    assert ops.matmul(*odd_k, which=True) == "warpspec"
    flat = torch.randn(1 + 256 * 256, device="cuda").to(torch.float16)
    unaligned = (flat[1:].view(256, 256), small[1][:256, :256])
    assert ops.matmul(*unaligned, which=True) == "warpspec"
    assert ops.matmul(*_ab(64, 64, 64, torch.float32, "cuda"), which=True) == "pipelined"
    assert ops.matmul(*_ab(64, 64, 64, torch.float32, "cpu"), which=True) == "cpu"
    for a, b in (big, small, skinny, odd_k, unaligned):  # what the default runs is what it says: the same bits
        assert_matmul_close(ops.matmul(a, b), a, b)
        assert torch.equal(ops.matmul(a, b), ops.matmul(a, b, version=ops.matmul(a, b, which=True)))


@pytest.mark.cuda
@pytest.mark.skipif(not on_hopper(), reason="the Hopper versions need a Hopper GPU (compute capability 9.0)")
def test_hopper_versions_refuse_float32():
    with pytest.raises(TypeError, match="take float16 or bfloat16 only, but a is .*Float"):
        ops.matmul(*_ab(64, 64, 64, torch.float32, "cuda"), version="persistent")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_gradients_run_on_the_fast_kernels(dtype):
    """dL/da = dc b^T and dL/db = a^T dc in 16 bits, through the op itself (on a Hopper GPU, the wgmma kernels, on
    transposed operands made contiguous), against float64."""
    a, b = _ab(256, 512, 384, dtype, "cuda")
    w = torch.randn(256, 512, device="cuda").to(dtype)
    a.requires_grad_(True), b.requires_grad_(True)
    (ops.matmul(a, b) * w).sum().backward()
    assert_matmul_close(a.grad, w, b.detach().t())
    assert_matmul_close(b.grad, a.detach().t(), w)


# Split-K (version 15): a long K under an output of few tiles. Every dtype it takes (16 bits on a Hopper GPU), with
# shapes that are cut into 2 to 32 ranges: one tile (1 x 1, 128 x 128), odd sizes (K no multiple of 4 or 8: the
# scalar loads in float32, the padded copy in 16 bits), A read through its eight residue maps (1000 rows, K odd: the
# first range alone zeroes the lag columns), and 128 x 128 x 8256, whose last 6 ranges of 32 are empty in 16 bits
# (ceil(129 / 32) = 5 steps of 64 to a range: the 27th starts past the end) and must add zeros; 1024 x 1024 x 8192 runs
# on 128 x 256 tiles in 16 bits, the rest on 128 x 128 ones.
SPLIT_SHAPES = [
    (1, 1, 4096),
    (7, 33, 5000),
    (128, 128, 8256),
    (129, 257, 4099),
    (512, 512, 8192),
    (1000, 136, 3001),
    (1024, 1024, 8192),
]


def split_dtypes():
    return [torch.float32] + ([torch.float16, torch.bfloat16] if on_hopper() else [])


@pytest.mark.cuda
@pytest.mark.parametrize("mnk", SPLIT_SHAPES, ids=str)
def test_split_k(mnk):
    for dtype in split_dtypes():
        a, b = _ab(*mnk, dtype, "cuda")
        got = ops.matmul(a, b, version="splitk")
        assert_matmul_close(got, a, b)
        # the partial products are added in a fixed order: the same inputs give the same bits every time
        assert torch.equal(got, ops.matmul(a, b, version="splitk"))


@pytest.mark.cuda
def test_fast_splits_k_where_the_output_has_few_tiles():
    """The default cuts K into ranges where the output has too few tiles for the SMs and K is long enough (512 x 8192
    x 512, M x K x N), and not where the tiles fill the GPU (4096^3, 16384 x 1024 x 1024) or K is short; what it runs
    is what it says."""
    for dtype in split_dtypes():
        long_k = _ab(512, 512, 8192, dtype, "cuda")
        assert ops.matmul(*long_k, which=True) == "splitk" and ops.matmul(*long_k, splits=True) > 1
        got = ops.matmul(*long_k)
        assert_matmul_close(got, *long_k)
        assert torch.equal(got, ops.matmul(*long_k, version="splitk"))
        for m, n, k in ((4096, 4096, 4096), (16384, 1024, 1024), (512, 512, 128)):
            a, b = torch.empty(m, k, device="cuda", dtype=dtype), torch.empty(k, n, device="cuda", dtype=dtype)
            assert ops.matmul(a, b, which=True) != "splitk" and ops.matmul(a, b, splits=True) == 1


@pytest.mark.cuda
def test_split_k_refuses_float64():
    with pytest.raises(TypeError, match=r"split-K \(15\) takes float32, float16 or bfloat16, but a is .*Double"):
        ops.matmul(*_ab(8, 8, 8, torch.float64, "cuda"), version="splitk")


@pytest.mark.cuda
def test_versions_refuse_other_dtypes():
    with pytest.raises(TypeError, match="versions 1-6 and 13-14 take float32 only, but a is .*BFloat16"):
        ops.matmul(*_ab(3, 3, 3, torch.bfloat16, "cuda"), version="vec")
    with pytest.raises(TypeError, match="take float16 or bfloat16 only, but a is .*Float"):
        ops.matmul(*_ab(3, 3, 3, torch.float32, "cuda"), version="wmma")


@pytest.mark.cuda
def test_mixed_devices():
    with pytest.raises(RuntimeError, match="a and b must be on the same device, but a is on cuda:0 and b is on cpu"):
        ops.matmul(torch.ones(2, 3, device="cuda"), torch.ones(3, 2))


@pytest.mark.cuda
def test_runs_on_the_current_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a, b = _ab(1000, 1000, 1000, torch.float32, "cuda")
        got = {v: ops.matmul(a, b, version=v) for v in F32_VERSIONS + ["fast"]}
    s.synchronize()
    for c in got.values():
        assert_matmul_close(c, a, b)


SANITIZE_CHILD = """
import torch
from loader import ops
for m, n, k in ((1, 1, 1), (7, 33, 129), (129, 127, 33), (33, 257, 7), (130, 132, 12), (33, 136, 40)):
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    for version in ("naive", "coalesced", "smem", "reg1d", "reg2d", "vec", "warptile", "pipelined", "fast"):
        ops.matmul(a, b, version=version)
    for dtype in (torch.float16, torch.bfloat16):
        ops.matmul(a.to(dtype), b.to(dtype), version="wmma")
    ops.matmul(a.double(), b.double())
for m, n, k in ((1, 1, 1100), (33, 136, 2052), (129, 7, 1031)):  # split-K: 2 to 4 ranges, float4 and scalar loads
    ops.matmul(torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda"), version="splitk")
torch.cuda.synchronize()
print("matmul-child-done")
"""


@pytest.mark.cuda
@pytest.mark.skipif(resources.tool("compute-sanitizer") is None, reason="no compute-sanitizer here")
@pytest.mark.parametrize("check", ["memcheck", "racecheck"])
def test_compute_sanitizer_finds_nothing(check):
    from loader import ops as built  # build in this process first: the child then only loads

    built.matmul(torch.ones(3, 3, device="cuda"), torch.ones(3, 3, device="cuda"))
    assert_sanitizer_clean(check, SANITIZE_CHILD, "matmul-child-done")


# Small shapes over every edge, a K longer than the ring (so every slot is refilled), and more 128 x 256 tiles than
# SMs (the persistent kernel's second pass over its barriers' phases)
SANITIZE_HOPPER_CHILD = """
import torch
from loader import ops
sms = torch.cuda.get_device_properties(0).multi_processor_count
shapes = [(1, 8, 8), (129, 136, 72), (65, 264, 640), (33, 131, 130), (256 * 2 + 1, 256 * (sms // 2), 16)]
shapes.append((256 * 2 + 1, 256 * (sms // 2) + 8, 16))  # narrow last tiles, taken by the persistent blocks in turn
shapes.append((130, 257, 389))  # both inputs padded, K over 7 steps of the ring
shapes.append((1000, 136, 125))  # A read through its eight residue maps (versions 9-12), the lag columns zeroed
for m, n, k in shapes:
    for dtype in (torch.float16, torch.bfloat16):
        a, b = torch.randn(m, k, device="cuda").to(dtype), torch.randn(k, n, device="cuda").to(dtype)
        for version in ("wgmma", "warpspec", "wide", "persistent", "tall"):
            ops.matmul(a, b, version=version)
# split-K: its last ranges empty (128 x 128 x 8256), on 128 x 256 tiles (768 x 1024 x 4096)
for m, n, k in ((1, 8, 1100), (65, 264, 2052), (1000, 136, 1031), (128, 128, 8256), (768, 1024, 4096)):
    for dtype in (torch.float16, torch.bfloat16):
        a, b = torch.randn(m, k, device="cuda").to(dtype), torch.randn(k, n, device="cuda").to(dtype)
        ops.matmul(a, b, version="splitk")
for offset in range(8):  # the padding copy's 16-byte pieces, at every alignment, near the ends of the storage
    flat = torch.randn(offset + 37 * 131, device="cuda").to(torch.bfloat16)
    for version in ("wgmma", "warpspec", "persistent"):
        ops.matmul(flat[offset:].view(37, 131), flat[offset : offset + 131 * 37].view(131, 37), version=version)
torch.cuda.synchronize()
print("matmul-hopper-child-done")
"""


@pytest.mark.cuda
@pytest.mark.skipif(not on_hopper(), reason="the Hopper versions need a Hopper GPU (compute capability 9.0)")
@pytest.mark.skipif(resources.tool("compute-sanitizer") is None, reason="no compute-sanitizer here")
@pytest.mark.parametrize("check", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_finds_nothing_in_the_hopper_versions(check):
    from loader import ops as built

    built.matmul(
        torch.ones(8, 8, device="cuda", dtype=torch.bfloat16), torch.ones(8, 8, device="cuda", dtype=torch.bfloat16)
    )
    assert_sanitizer_clean(check, SANITIZE_HOPPER_CHILD, "matmul-hopper-child-done")
