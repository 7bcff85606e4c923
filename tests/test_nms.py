"""ops.nms against torchvision.ops.nms (the reference, on the same device): the same indices in the same order, on
random boxes of many counts (around the GPU's 64-box words), thresholds 0 to 1, tied scores, duplicate and zero-area
boxes, every dtype (16-bit on exactly representable boxes against torchvision in float32), ops.nms(..., idxs=)
against torchvision.ops.batched_nms, torch.compile(fullgraph=True) with the output's data-dependent length, opcheck,
empty inputs, bad input; on a GPU also large counts, the current stream and compute-sanitizer's memcheck and
racecheck."""

import pytest
import torch
from conftest import assert_sanitizer_clean

from kit import resources
from loader import ops

torchvision = pytest.importorskip("torchvision", reason="torchvision is the reference (requirements.txt)")

COUNTS = [1, 2, 5, 63, 64, 65, 127, 128, 129, 500, 1500]
THRESHOLDS = [0.0, 0.2, 0.5, 0.7, 1.0]


def make_boxes(n, seed=0, device="cpu", dtype=torch.float32, extent=200.0, size=40.0, integer=False):
    """n boxes (x1, y1, x2, y2) in an extent x extent square, up to size wide: crowded enough that many overlap.

    The corners lie on a quarter-pixel grid (integer=True: on whole pixels): then every difference, product and sum
    of an IoU is exact in float32 and only the division rounds, identically on every device, whether or not the
    compiler fuses a multiply and an add into one FMA. nvcc does fuse them in torchvision's CUDA kernel (ours rounds
    each product: nms.h), so on arbitrary floats its last bit can differ from its CPU kernel's (and ours), and a pair
    whose IoU lies within that bit of the threshold can go either way. Among the millions of pairs of the large
    tests such a pair turns up now and then: a flaky test, not a bug."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * extent
    wh = torch.rand(n, 2, generator=g, dtype=torch.float64) * size
    boxes = torch.cat([xy, xy + wh], dim=1)
    boxes = boxes.round() if integer else (boxes * 4).round() / 4
    return boxes.to(device=device, dtype=dtype)


def make_scores(n, seed=0, device="cpu", dtype=torch.float32, ties=False):
    g = torch.Generator().manual_seed(seed + 1000)
    s = torch.randint(0, 4, (n,), generator=g).double() if ties else torch.rand(n, generator=g, dtype=torch.float64)
    return s.to(device=device, dtype=dtype)


def assert_same(ours, theirs):
    assert ours.dtype == torch.int64 and ours.dim() == 1 and ours.device == theirs.device
    assert torch.equal(ours, theirs), f"ours {ours.tolist()[:20]}... torchvision {theirs.tolist()[:20]}..."


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("threshold", THRESHOLDS)
@pytest.mark.parametrize("n", COUNTS)
def test_matches_torchvision(device, dtype, threshold, n):
    boxes, scores = make_boxes(n, n, device, dtype), make_scores(n, n, device, dtype)
    assert_same(ops.nms(boxes, scores, threshold), torchvision.ops.nms(boxes, scores, threshold))


@pytest.mark.parametrize("threshold", THRESHOLDS)
@pytest.mark.parametrize("n", [7, 64, 200, 1000])
def test_tied_scores(device, threshold, n):
    """Scores of 4 values only: among equal scores, the lower index comes first (both sort stably, descending)."""
    boxes, scores = make_boxes(n, n, device), make_scores(n, n, device, ties=True)
    assert_same(ops.nms(boxes, scores, threshold), torchvision.ops.nms(boxes, scores, threshold))
    ones = torch.ones(n, device=device)
    assert_same(ops.nms(boxes, ones, threshold), torchvision.ops.nms(boxes, ones, threshold))


def test_duplicates_zero_area_and_the_threshold_edges(device):
    """An identical box has IoU exactly 1: suppressed below 1, kept at 1 (the test is IoU > threshold). A box of
    zero area has IoU 0 with any other (0 / 0 = NaN with another of zero area): never suppressed, never
    suppressing. Threshold 0: any overlap of positive area suppresses; boxes that only touch do not."""
    b = torch.tensor(
        [
            [0, 0, 10, 10],
            [0, 0, 10, 10],  # a duplicate
            [10, 0, 20, 10],  # touches the first along an edge
            [5, 5, 5, 9],  # zero width
            [3, 3, 3, 3],  # a point
            [9, 9, 15, 15],  # overlaps the first by 1 / 135
        ],
        device=device,
        dtype=torch.float32,
    )
    s = torch.tensor([0.9, 0.8, 0.7, 0.95, 0.99, 0.6], device=device)
    for threshold in (0.0, 1 / 135 - 1e-6, 1 / 135 + 1e-6, 0.5, 0.9999, 1.0, 2.0):
        assert_same(ops.nms(b, s, threshold), torchvision.ops.nms(b, s, threshold))
    assert ops.nms(b, s, 1.0).tolist() == [4, 3, 0, 1, 2, 5]
    assert ops.nms(b, s, 0.5).tolist() == [4, 3, 0, 2, 5]
    assert ops.nms(b, s, 0.0).tolist() == [4, 3, 0, 2]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [1, 65, 700])
def test_16bit_on_exact_boxes(device, dtype, n):
    """Integer corners below 256 are exact in float16 and bfloat16, and so are their differences: our 16-bit NMS
    (computed in float) then decides exactly as torchvision does in float32 on the same values."""
    boxes = make_boxes(n, n, device, dtype, extent=200, size=50, integer=True)
    scores = make_scores(n, n, device, dtype)
    for threshold in (0.0, 0.3, 0.5, 0.8):
        assert_same(ops.nms(boxes, scores, threshold), torchvision.ops.nms(boxes.float(), scores.float(), threshold))


@pytest.mark.parametrize("n", [1, 40, 300, 1000])
def test_batched_matches_torchvision(device, n):
    """At most 1,000 boxes: torchvision uses the coordinate trick too, so even the order of equal scores agrees."""
    boxes, scores = make_boxes(n, n, device), make_scores(n, n, device, ties=True)
    idxs = torch.randint(0, 5, (n,), generator=torch.Generator().manual_seed(n)).to(device)
    for threshold in (0.0, 0.5, 1.0):
        assert_same(
            ops.nms(boxes, scores, threshold, idxs=idxs), torchvision.ops.batched_nms(boxes, scores, idxs, threshold)
        )


def test_batched_many_boxes_distinct_scores(device):
    """Past 4,000 numbers (CPU) or 20,000 (GPU) torchvision loops over the classes; with distinct scores the result
    is the same list."""
    n = 6000
    boxes, scores = make_boxes(n, 7, device, torch.float64), make_scores(n, 7, device, torch.float64)
    idxs = torch.randint(0, 20, (n,), generator=torch.Generator().manual_seed(7)).to(device)
    assert_same(ops.nms(boxes, scores, 0.5, idxs=idxs), torchvision.ops.batched_nms(boxes, scores, idxs, 0.5))


def test_empty(device):
    for dtype in (torch.float32, torch.float16):
        boxes, scores = torch.empty(0, 4, device=device, dtype=dtype), torch.empty(0, device=device, dtype=dtype)
        keep = ops.nms(boxes, scores, 0.5)
        assert keep.shape == (0,) and keep.dtype == torch.int64 and keep.device == boxes.device
        keep = ops.nms(boxes, scores, 0.5, idxs=torch.empty(0, dtype=torch.int64, device=device))
        assert keep.shape == (0,) and keep.dtype == torch.int64


def test_views(device):
    """Non-contiguous boxes and scores (columns of a wider tensor) give the same result as contiguous ones."""
    boxes, scores = make_boxes(300, 3, device), make_scores(300, 3, device)
    wide = torch.cat([boxes, scores[:, None]], dim=1)
    assert_same(ops.nms(wide[:, :4], wide[:, 4], 0.5), torchvision.ops.nms(boxes, scores, 0.5))
    assert_same(ops.nms(boxes[::2], scores[::2], 0.5), torchvision.ops.nms(boxes[::2], scores[::2], 0.5))


def test_torch_compile_fullgraph(device):
    """The kept count is known only at run time: the fake kernel gives it as a new symbol, so the whole function
    compiles into one graph, and the compiled result is the eager one, count after count."""
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def detect(boxes, scores):
        keep = ops.nms(boxes * 2.0, scores, 0.5)
        return keep, boxes[keep], scores[keep].sum()

    for n, seed in ((100, 0), (100, 1), (257, 2), (3, 3)):
        boxes, scores = make_boxes(n, seed, device), make_scores(n, seed, device)
        keep, kept_boxes, total = detect(boxes, scores)
        expected = torchvision.ops.nms(boxes * 2.0, scores, 0.5)
        assert_same(keep, expected)
        assert torch.equal(kept_boxes, boxes[expected])
        torch.testing.assert_close(total, scores[expected].sum())


def test_opcheck(device):
    boxes, scores = make_boxes(50, 0, device), make_scores(50, 0, device)
    torch.library.opcheck(torch.ops.labkit.nms.default, (boxes, scores, 0.5))
    torch.library.opcheck(torch.ops.labkit.nms.default, (boxes.double(), scores.double(), 0.0))
    torch.library.opcheck(torch.ops.labkit.nms.default, (boxes.bfloat16(), scores.bfloat16(), 1.0))


# -- bad input ---------------------------------------------------------------------------------------------------------


def _bad():
    return make_boxes(6), make_scores(6)


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda b, s: (b[:, :3], s, 0.5), ValueError, r"nms: boxes must have shape \(N, 4\).*has shape \[6, 3\]"),
        (lambda b, s: (b[0], s, 0.5), ValueError, r"nms: boxes must have shape \(N, 4\)"),
        (lambda b, s: (b, s[:, None], 0.5), ValueError, r"nms: scores must be 1-D \(N\), but has shape \[6, 1\]"),
        (
            lambda b, s: (b, s[:5], 0.5),
            ValueError,
            "boxes and scores must have the same length N, but boxes has 6 rows",
        ),
        (lambda b, s: (b, s.double(), 0.5), TypeError, "boxes and scores must have the same dtype, but boxes is Float"),
        (lambda b, s: (b.long(), s.long(), 0.5), TypeError, "nms: boxes must be a floating-point tensor .* got Long"),
        (lambda b, s: (b, s, -0.1), ValueError, r"nms: iou_threshold must be >= 0 .* but is -0.1"),
        (lambda b, s: (b, s, float("nan")), ValueError, "nms: iou_threshold must be >= 0 .* but is nan"),
    ],
)
def test_bad_input(change, error, match):
    with pytest.raises(error, match=match):
        ops.nms(*change(*_bad()))


def test_bad_idxs():
    with pytest.raises(RuntimeError, match=r"nms: idxs must be 1-D with one class per box \(6\), but has shape \[5\]"):
        ops.nms(*_bad(), 0.5, idxs=torch.zeros(5, dtype=torch.int64))


# -- on a GPU ----------------------------------------------------------------------------------------------------------


@pytest.mark.cuda
def test_cpu_and_cuda_tensors_mixed():
    b, s = _bad()
    with pytest.raises(RuntimeError, match="nms: boxes and scores must be on the same device, but boxes is on cpu"):
        ops.nms(b, s.cuda(), 0.5)


@pytest.mark.cuda
@pytest.mark.parametrize("n", [4096, 10_000, 30_000])
def test_many_boxes_on_the_gpu(n):
    """bench/bench_nms.py's counts and more: 157 to 469 words per mask row. Also the same as our CPU."""
    for extent, size in ((1000.0, 40.0), (200.0, 60.0)):  # few kept, many kept
        boxes = make_boxes(n, n, "cuda", extent=extent, size=size)
        scores = make_scores(n, n, "cuda")
        ours = ops.nms(boxes, scores, 0.5)
        assert_same(ours, torchvision.ops.nms(boxes, scores, 0.5))
        assert torch.equal(ours.cpu(), ops.nms(boxes.cpu(), scores.cpu(), 0.5))


@pytest.mark.cuda
def test_float16_matches_torchvisions_float16_kernel():
    """torchvision's CUDA NMS takes float16 too, rounding some differences to 16 bits: ours rounds at the same
    places."""
    for n in (100, 2000):
        boxes = make_boxes(n, n, "cuda", torch.float16)
        scores = make_scores(n, n, "cuda", torch.float16)
        for threshold in (0.3, 0.5, 0.7):
            assert_same(ops.nms(boxes, scores, threshold), torchvision.ops.nms(boxes, scores, threshold))


def pile_and_loners(n, device):
    """n boxes: all one box (IoU 1 with each other) but for 10 loners, far from it and from each other, with distinct
    scores. NMS keeps the pile's best box and every loner, by decreasing score: the answer by construction, for sizes
    where torchvision cannot serve as the reference (its mask's size overflows an int past ~370,000 boxes)."""
    scores = torch.randperm(n, device=device).float() / n
    boxes = torch.tensor([10.0, 10.0, 60.0, 60.0], device=device).repeat(n, 1)
    loners = torch.arange(10, device=device) * (n // 10)
    at = 1000.0 + 100.0 * torch.arange(10, device=device, dtype=torch.float32)
    boxes[loners] = torch.stack([at, at, at + 50, at + 50], 1)
    pile = torch.ones(n, dtype=torch.bool, device=device)
    pile[loners] = False
    best = torch.nonzero(pile).flatten()[scores[pile].argmax()]
    kept = torch.cat([loners, best.view(1)])
    return boxes, scores, kept[scores[kept].argsort(descending=True)]


def test_pile_and_loners_small(device):
    boxes, scores, expected = pile_and_loners(1000, device)
    assert_same(ops.nms(boxes, scores, 0.3), expected)
    assert_same(torchvision.ops.nms(boxes, scores, 0.3), expected)  # the construction, checked once


@pytest.mark.cuda
@pytest.mark.big_gpu_memory
def test_past_48_kb_of_shared_memory():
    """Over 393,216 boxes the walk's bit per box needs more than 48 KB of shared memory, which a kernel must ask for.
    The boxes pile up (11 are kept), so the walk is short; the mask is 20 GB."""
    n = 400_000
    if torch.cuda.mem_get_info()[0] < 24e9:
        pytest.skip("needs 24 GB of free GPU memory")
    boxes, scores, expected = pile_and_loners(n, "cuda")
    assert_same(ops.nms(boxes, scores, 0.3), expected)


@pytest.mark.cuda
def test_runs_on_the_inputs_gpu_and_current_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        boxes, scores = make_boxes(5000, 9, "cuda"), make_scores(5000, 9, "cuda")
        boxes = boxes * 1.0  # queued on s: ours must wait for it
        ours = ops.nms(boxes, scores, 0.5)
        theirs = torchvision.ops.nms(boxes, scores, 0.5)
    s.synchronize()
    assert_same(ours, theirs)


SANITIZE_CHILD = """
import torch
from loader import ops
g = torch.Generator().manual_seed(0)
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
    for n in (1, 2, 63, 64, 65, 200, 1000):
        xy = torch.rand(n, 2, generator=g) * 100
        boxes = torch.cat([xy, xy + torch.rand(n, 2, generator=g) * 30], dim=1).to("cuda", dtype)
        scores = torch.rand(n, generator=g).to("cuda", dtype)
        for threshold in (0.0, 0.5, 1.0):
            ops.nms(boxes, scores, threshold)
torch.cuda.synchronize()
print("nms-child-done")
"""


@pytest.mark.cuda
@pytest.mark.skipif(resources.tool("compute-sanitizer") is None, reason="no compute-sanitizer here")
@pytest.mark.parametrize("check", ["memcheck", "racecheck"])
def test_compute_sanitizer_finds_nothing(check):
    from loader import ops as built  # build in this process first: the child then only loads

    built.nms(torch.zeros(1, 4, device="cuda"), torch.zeros(1, device="cuda"), 0.5)
    assert_sanitizer_clean(check, SANITIZE_CHILD, "nms-child-done")
