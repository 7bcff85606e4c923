"""Exercise 12: RoIAlign's bilinear sample, with its edge rules.

RoIAlign averages samples of the feature map taken at points that fall between pixels, so each sample is a
bilinear interpolation of the four pixels around its point. Write `bilinear` in `ex12_bilinear_sample.h` (roughly
14 lines): the value of a channel plane (H x W, pixel (row, col) at `plane[row * W + col]`) at the point (y, x),
with torchvision's rules:
- a point more than a pixel off the map, `y < -1`, `y > H`, `x < -1` or `x > W`, gives 0 (-1 and H themselves are
  still on it);
- a point between -1 and 0 is clamped onto 0 (`y = 0`; likewise x);
- the low neighbour is `y_low = int64_t(y)` and the high one `y_high = y_low + 1`; but from the last row on
  (`y_low >= H - 1`) both are row `H - 1`, and `y = y_low` (no pixel after the last to read); likewise x with W;
- with `ly = y - y_low`, `lx = x - x_low`, `hy = 1 - ly`, `hx = 1 - lx`: the value is `hy * hx * (y_low, x_low) +
  hy * lx * (y_low, x_high) + ly * hx * (y_high, x_low) + ly * lx * (y_high, x_high)`.
The rest of RoIAlign's forward is given (each box's bins, the sampling points, their average; one GPU thread per
output element), and calls yours for every sampling point. float32 and float64; the CPU runs the same code, so a
laptop can do this exercise too.

Checked on every device here: at awkward points (inside, exactly on an edge, in the last row and column, exactly
at -1 and at H or W, just outside, between -1 and 0; on a 5 x 7 plane and a 1 x 3 one) against an independent
float64 reference, each point sampled alone (a 1 x 1 output of a box centred on it, one sample); with NaN in the
memory around the map (a read outside it is caught); and against `torchvision.ops.roi_align` on random boxes (partly
outside the map, smaller than a pixel, inverted), aligned or not, several output sizes and sampling ratios.

In 08_detection_ops.ipynb; grade it there with `check("ex12_bilinear_sample")`, or
`python -m kit.grade ex12_bilinear_sample`."""

import math

import torch

from kit.checks import PAD, begin, devices

NUMBER = 12  # its place in the lessons
EDIT = "exercises/ex12_bilinear_sample/ex12_bilinear_sample.h"  # the file to edit

# (what kind of point, y, x) on each plane (H, W): one kind after another, so the first failure names the rule
PLANES = [(5, 7), (1, 3)]
KINDS = ["inside", "on an edge", "in the last row or column", "at -1 or at H, W", "just outside", "between -1 and 0"]


def points(h, w):
    if h == 1:  # a map of one row: every point on it is in the last row
        return [
            ("in the last row or column", 0.0, 1.25),
            ("in the last row or column", 0.5, 0.75),
            ("in the last row or column", 0.25, w - 0.5),
            ("at -1 or at H, W", 1.0, 1.5),
            ("at -1 or at H, W", -1.0, 0.25),
            ("just outside", 1.25, 1.0),
            ("just outside", -1.25, 1.0),
            ("between -1 and 0", -0.5, 1.5),
        ]
    return [
        ("inside", 1.25, 2.75),
        ("inside", 0.5, 0.25),
        ("inside", h - 1.5, w - 1.75),
        ("on an edge", 0.0, 1.25),
        ("on an edge", 0.5, 0.0),
        ("on an edge", h - 1.0, 0.75),
        ("on an edge", 0.25, w - 1.0),
        ("on an edge", h - 1.0, w - 1.0),
        ("in the last row or column", h - 0.5, 1.25),
        ("in the last row or column", 0.75, w - 0.25),
        ("in the last row or column", h - 0.25, w - 0.5),
        ("at -1 or at H, W", -1.0, 1.5),
        ("at -1 or at H, W", float(h), 0.25),
        ("at -1 or at H, W", 0.75, -1.0),
        ("at -1 or at H, W", 0.5, float(w)),
        ("just outside", -1.25, 1.5),
        ("just outside", h + 0.25, 0.5),
        ("just outside", 0.5, -1.25),
        ("just outside", 0.25, w + 0.25),
        ("between -1 and 0", -0.5, 1.25),
        ("between -1 and 0", 0.25, -0.75),
        ("between -1 and 0", -0.25, -0.5),
    ]


def bilinear_reference(plane, y, x):
    """The value of plane (a list of rows of floats) at (y, x) by torchvision's rules, in Python's float64."""
    h, w = len(plane), len(plane[0])
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y0, y1, y = (h - 1, h - 1, float(h - 1)) if y0 >= h - 1 else (y0, y0 + 1, y)
    x0, x1, x = (w - 1, w - 1, float(w - 1)) if x0 >= w - 1 else (x0, x0 + 1, x)
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return hy * hx * plane[y0][x0] + hy * lx * plane[y0][x1] + ly * hx * plane[y1][x0] + ly * lx * plane[y1][x1]


def probe(op, h, w, dtype, dev):
    """Each point of points(h, w) sampled alone by op: a 1 x 1 output of a box from (x - 1, y - 1) to (x + 1,
    y + 1), one sample per bin, which falls exactly on (y, x). The plane lies in the middle of a buffer of NaN, so a
    read outside it shows. Returns (the plane as lists, [(kind, y, x, expected, got)])."""
    plane = torch.randn(h, w, generator=torch.Generator().manual_seed(h * 100 + w), dtype=torch.float64)
    buf = torch.full((PAD + h * w + PAD,), float("nan"), dtype=dtype, device=dev)
    view = buf[PAD : PAD + h * w]
    view.copy_(plane.flatten())
    pts = points(h, w)
    boxes = torch.tensor([[0.0, x - 1, y - 1, x + 1, y + 1] for _, y, x in pts], dtype=dtype, device=dev)
    got = op(view.view(1, 1, h, w), boxes, 1, 1.0, 1, False).flatten().double().cpu().tolist()
    rows = plane.tolist()
    return rows, [(kind, y, x, bilinear_reference(rows, y, x), g) for (kind, y, x), g in zip(pts, got)]


def close(expected, got, dtype):
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    return math.isclose(got, expected, rel_tol=tol, abs_tol=tol)  # NaN is never close


def swapped(rows, y, x):
    """The value with the weights of the low and high neighbours swapped (along both axes), for the hint."""
    h, w = len(rows), len(rows[0])
    y0, x0 = min(int(y), h - 1), min(int(x), w - 1)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return (
        ly * lx * rows[y0][x0]
        + ly * (1 - lx) * rows[y0][x1]
        + (1 - ly) * lx * rows[y1][x0]
        + ((1 - ly) * (1 - lx) * rows[y1][x1])
    )


def hint(kind, rows, y, x, got):
    """What the rule for this kind of point says, told from what the answer got."""
    if math.isnan(got) and kind in ("at -1 or at H, W", "between -1 and 0") and min(y, x) < 0:
        return (
            "NaN: a pixel before the map was read (the memory there holds NaN): clamp a coordinate between -1 and 0 "
            "onto 0 before taking int64_t(y) (int64_t(-1.0) is -1, a row before the first)"
        )
    if math.isnan(got):
        return (
            "NaN: a pixel past the map was read (the memory after it holds NaN). From the last row on "
            "(y_low >= H - 1) both neighbours are row H - 1, and y = y_low; likewise the last column with W"
        )
    if kind == "just outside":
        return "a point more than a pixel off the map (y < -1, y > H, x < -1 or x > W) gives 0"
    if kind == "at -1 or at H, W":
        return (
            "-1, H and W themselves are on the map (the test is y < -1 or y > H, not <= or >=): -1 is clamped onto "
            "0, and H falls in the last row"
        )
    if kind == "between -1 and 0":
        if got == 0.0:
            return "a point between -1 and 0 is still on the map: clamp it onto 0 (y = 0, x = 0), then interpolate"
        return (
            "clamp a coordinate between -1 and 0 onto 0 before taking int64_t(y): int64_t(-0.5) is 0 (it rounds "
            "toward zero), so ly = y - y_low would be negative"
        )
    if kind in ("on an edge", "in the last row or column"):
        return (
            "at the last row (y_low >= H - 1) both neighbours are row H - 1 and y = y_low, so ly = 0; likewise the "
            "last column with W. A point exactly on row 0 or column 0 is inside: its low neighbour is 0"
        )
    if math.isclose(got, swapped(rows, y, x), rel_tol=1e-5, abs_tol=1e-6):
        return "the weights are swapped: the low neighbour (y_low) gets hy = 1 - ly, the high one (y_high) gets ly"
    return (
        "the four pixels are (y_low, x_low), (y_low, x_high), (y_high, x_low), (y_high, x_high) with the weights "
        "hy * hx, hy * lx, ly * hx, ly * lx (ly = y - y_low, hy = 1 - ly); pixel (row, col) is plane[row * W + col]"
    )


def random_boxes(k, h, w, scale, seed):
    """k boxes in image coordinates (the map's size / scale): most inside, some partly or wholly outside, some
    smaller than a pixel, two inverted."""
    g = torch.Generator().manual_seed(seed)
    hh, ww = h / scale, w / scale
    xy = torch.rand(k, 2, generator=g, dtype=torch.float64) * torch.tensor([ww + 6, hh + 6]) - 3
    size = torch.rand(k, 2, generator=g, dtype=torch.float64) * torch.tensor([ww, hh]) * 0.6
    size[: k // 5] *= 0.02
    size[k // 5 : k // 5 + 2] *= -0.5
    index = torch.randint(0, 2, (k, 1), generator=g).double()
    return torch.cat([index, xy, xy + size], dim=1)


CASES = [  # output_size, spatial_scale, sampling_ratio, aligned
    ((7, 7), 1.0, -1, False),
    ((7, 7), 1.0, -1, True),
    ((3, 5), 0.5, 2, False),
    ((2, 4), 0.25, 0, True),
    ((5, 1), 2.0, 3, False),
]


def grade(ops, kit_root):
    report, op = begin(ops, "ex12_bilinear_sample", EDIT)
    if op is None:
        return report
    try:
        import torchvision
    except ImportError:
        torchvision = None
    for dev in devices():
        outside_read = None
        for dtype in (torch.float64, torch.float32):
            dname = str(dtype).replace("torch.", "")
            failure = None
            for h, w in PLANES:
                rows, results = probe(op, h, w, dtype, dev)
                for kind, y, x, e, got in sorted(results, key=lambda r: KINDS.index(r[0])):
                    if math.isnan(got) and not math.isnan(e) and outside_read is None:
                        outside_read = (h, w, y, x)
                    if not close(e, got, dtype) and failure is None:
                        failure = (h, w, kind, y, x, e, got, rows)
            name = f"bilinear samples at awkward points on {dev}, {dname}"
            if failure:
                h, w, kind, y, x, e, got, rows = failure
                report.add(
                    name,
                    False,
                    f"on a {h} x {w} plane, the point (y, x) = ({y:g}, {x:g}) ({kind}) should give {e:.6g}, "
                    f"got {got:.6g}",
                    hint(kind, rows, y, x, got),
                )
            else:
                report.add(name, True, f"{sum(len(points(h, w)) for h, w in PLANES)} points, on {len(PLANES)} planes")

            name = f"matches torchvision.ops.roi_align on {dev}, {dname}"
            if torchvision is None:
                report.skip(name, "torchvision is not installed here (pip install torchvision: requirements.txt)")
                continue
            failure = None
            for i, (size, scale, ratio, aligned) in enumerate(CASES):
                g = torch.Generator().manual_seed(i)
                x = torch.randn(2, 3, 9, 11, generator=g, dtype=torch.float64).to(dev, dtype)
                boxes = random_boxes(30, 9, 11, scale, seed=i).to(dev, dtype)
                ref = torchvision.ops.roi_align(x, boxes, size, scale, ratio, aligned)
                got = op(x, boxes, size, scale, ratio, aligned)
                tol = 1e-12 if dtype == torch.float64 else 1e-5
                bad = ~torch.isclose(got, ref, rtol=tol, atol=tol)
                if bad.any():
                    k, c, py, px = (int(v) for v in bad.nonzero()[0])
                    failure = (size, scale, ratio, aligned, k, c, py, px, float(ref[k, c, py, px]), got[k, c, py, px])
                    break
            if failure:
                size, scale, ratio, aligned, k, c, py, px, e, got = failure
                report.add(
                    name,
                    False,
                    f"output_size={size}, spatial_scale={scale}, sampling_ratio={ratio}, aligned={aligned}: box "
                    f"{k}, channel {c}, bin ({py}, {px}) should be {e:.6g}, got {float(got):.6g}",
                    "fix the samples at awkward points first (above)"
                    if any(r.status == "fail" and r.check.startswith("bilinear samples") for r in report.results)
                    else "each sample is the bilinear interpolation of the four pixels around its point; check the "
                    "weights and which pixels they go with",
                )
            else:
                report.add(name, True, f"{len(CASES)} cases of 30 random boxes, aligned and not")
        if outside_read:
            h, w, y, x = outside_read
            report.add(
                f"reads nothing outside the map on {dev}",
                False,
                f"on a {h} x {w} plane with NaN in the memory around it, the point (y, x) = ({y:g}, {x:g}) came out "
                f"NaN: a pixel outside the map was read",
                "a coordinate between -1 and 0 is clamped onto 0 before int64_t(y) (int64_t(-1.0) is -1); from the "
                "last row on (y_low >= H - 1) both neighbours are row H - 1, not y_low + 1 = H; likewise the columns",
            )
        else:
            report.add(f"reads nothing outside the map on {dev}", True, "with NaN in the memory around the map")
    return report
