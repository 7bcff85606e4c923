"""Exercise 14: deformable convolution's offset sampling.

A deformable convolution (DCNv2, as `torchvision.ops.deform_conv2d` computes it) reads each tap of its kernel not at
the tap's grid point but a learnt, fractional offset away, by bilinear interpolation, and scales what it read by a
learnt mask. Write `deform_tap` in `ex14_deform_sample.h` (roughly 12 lines): what tap (i, j) of output pixel
(oy, ox) reads from one channel plane (H x W, pixel (row, col) at `plane[row * W + col]`), with torchvision's rules:
- the tap samples at `y = oy * stride_h - pad_h + i * dilation_h + dy` and `x = ox * stride_w - pad_w +
  j * dilation_w + dx`: its grid point (a whole pixel) moved by the offset (dy, dx);
- a sample with `y <= -1`, `y >= H`, `x <= -1` or `x >= W` reads 0 (no pixel of the map within reach);
- else it reads the rows `y0 = floor(y)` and `y0 + 1` and the columns `x0 = floor(x)` and `x0 + 1` (floor, not
  `int64_t(y)`, which rounds -0.5 up to 0), and a pixel off the map reads 0 (zero padding: nothing is clamped onto
  the edge, unlike RoIAlign's samples in exercise 12);
- with `ly = y - y0`, `lx = x - x0`, `hy = 1 - ly`, `hx = 1 - lx`, the value is `hy * hx * (y0, x0) + hy * lx *
  (y0, x0 + 1) + ly * hx * (y0 + 1, x0) + ly * lx * (y0 + 1, x0 + 1)`, and the tap returns it times the mask `m`.
The rest of the deformable im2col is given: each entry of the columns (a channel, a tap, an output pixel) finds its
offset and mask and calls yours, one GPU thread per entry; the convolution is then the weight times the columns, an
ordinary matmul. float32 and float64; the CPU runs the same code, so a laptop can do this exercise too.

Checked on every device here: at awkward points (inside, at whole pixels, between -1 and 0, in the last row and
column, exactly at -1, H and W, far off the map; on a 5 x 7 plane and a 1 x 3 one), each with a mask of its own,
against an independent float64 reference, with NaN in the memory around the map (a read outside it is caught); where
the taps of a strided, padded, dilated 3 x 2 kernel sample (read off planes that hold each pixel's row and column);
and the columns against `torchvision.ops.deform_conv2d` (whose output, with one-hot weights, is the columns) on
random offsets, whole pixels and far-off samples among them, one and two offset groups, several strides, paddings and
dilations.

The first exercise of 09_deformable_conv.ipynb; grade it with `check("ex14_deform_sample")` in a notebook, or
`python -m kit.grade ex14_deform_sample`."""

import itertools
import math

import torch

from kit.checks import PAD, amid_nan, begin, devices

NUMBER = 14  # its place in the lessons
EDIT = "exercises/ex14_deform_sample/ex14_deform_sample.h"  # the file to edit

PLANES = [(5, 7), (1, 3)]
OFF = "exactly at -1, H or W, or off the map"
KINDS = ["inside", "at whole pixels", "between -1 and 0", "in the last row or column", OFF]
MASKS = [0.75, 1.5, 0.625, 1.25, 0.875]  # one per point, in turn: exact in float32, and never 1


def points(h, w):
    """(what kind of point, y, x) on an h x w plane: one kind after another, so the first failure names the rule."""
    if h == 1:  # a map of one row: every point on it is in the last row
        return [
            ("in the last row or column", 0.5, 0.75),
            ("in the last row or column", 0.0, 1.25),
            ("in the last row or column", 0.25, w - 0.5),
            ("between -1 and 0", -0.5, 1.25),
            ("between -1 and 0", 0.75, -0.25),
            (OFF, -1.0, 0.5),
            (OFF, 1.0, 1.5),
            (OFF, 0.5, float(w)),
        ]
    return [
        ("inside", 1.25, 2.75),
        ("inside", 0.5, 0.25),
        ("inside", h - 1.5, w - 1.75),
        ("at whole pixels", 2.0, 3.0),
        ("at whole pixels", 0.0, 0.0),
        ("at whole pixels", 2.0, 1.5),
        ("at whole pixels", 1.25, 4.0),
        ("between -1 and 0", -0.5, 1.25),
        ("between -1 and 0", 1.5, -0.25),
        ("between -1 and 0", -0.75, -0.5),
        ("in the last row or column", h - 0.5, 1.25),
        ("in the last row or column", 0.75, w - 0.25),
        ("in the last row or column", h - 0.25, w - 0.5),
        ("in the last row or column", h - 1.0, 2.5),
        (OFF, -1.0, 1.5),
        (OFF, float(h), 0.25),
        (OFF, 0.75, -1.0),
        (OFF, 0.5, float(w)),
        (OFF, -1.25, 1.5),
        (OFF, h + 0.25, 0.5),
        (OFF, -40.5, 2.0),
        (OFF, 2.0, w + 30.25),
    ]


def value_reference(rows, y, x, rounding=math.floor):
    """The bilinear value of the plane `rows` (a list of rows of floats) at (y, x) by torchvision's rules, in
    Python's float64; rounding=int gives what truncation toward zero would read instead (for the hint)."""
    h, w = len(rows), len(rows[0])
    if y <= -1 or y >= h or x <= -1 or x >= w:
        return 0.0
    y0, x0 = rounding(y), rounding(x)
    ly, lx = y - y0, x - x0

    def at(r, c):
        return rows[r][c] if 0 <= r < h and 0 <= c < w else 0.0

    return (
        (1 - ly) * (1 - lx) * at(y0, x0)
        + (1 - ly) * lx * at(y0, x0 + 1)
        + ly * (1 - lx) * at(y0 + 1, x0)
        + ly * lx * at(y0 + 1, x0 + 1)
    )


def probe(op, h, w, dtype, dev):
    """Each point of points(h, w) sampled by op's tap: a 1 x 1 kernel (stride 1, no padding), output pixel (oy, ox)
    moved to the point by the offset (y - oy, x - ox), as many points a call as the map has pixels. The plane lies
    in the middle of a buffer of NaN, so a read outside it shows. Returns (the plane as lists, [(kind, y, x, mask,
    oy, ox, got)])."""
    plane = torch.randn(h, w, generator=torch.Generator().manual_seed(h * 100 + w), dtype=torch.float64)
    buf = torch.full((PAD + h * w + PAD,), float("nan"), dtype=dtype, device=dev)
    view = buf[PAD : PAD + h * w]
    view.copy_(plane.flatten())
    pts = [(kind, y, x, MASKS[i % len(MASKS)]) for i, (kind, y, x) in enumerate(points(h, w))]
    results = []
    for start in range(0, len(pts), h * w):
        chunk = pts[start : start + h * w]
        offset = torch.zeros(1, 2, h, w, dtype=torch.float64)
        mask = torch.ones(1, 1, h, w, dtype=torch.float64)
        for s, (_, y, x, m) in enumerate(chunk):
            oy, ox = divmod(s, w)
            offset[0, :, oy, ox] = torch.tensor([y - oy, x - ox], dtype=torch.float64)
            mask[0, 0, oy, ox] = m
        columns = op(view.view(1, 1, h, w), offset.to(dev, dtype), 1, mask=mask.to(dev, dtype))
        got = columns[0].double().cpu().tolist()
        results += [(kind, y, x, m, *divmod(s, w), got[s]) for s, (kind, y, x, m) in enumerate(chunk)]
    return plane.tolist(), results


def close(expected, got, dtype):
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    return math.isclose(got, expected, rel_tol=tol, abs_tol=tol)  # NaN is never close


def hint(kind, rows, y, x, m, oy, ox, got):
    """What the rule for this kind of point says, told from what the answer got."""

    def near(v):
        return math.isclose(got, v, rel_tol=1e-5, abs_tol=1e-6)

    value = value_reference(rows, y, x)
    if math.isnan(got):
        if min(y, x) < 0:
            return (
                "NaN: a pixel before the map was read (the memory there holds NaN): a pixel off the map reads 0, "
                "without a load: test y0 >= 0 (x0 >= 0) before reading row y0 (column x0)"
            )
        return (
            "NaN: a pixel past the map was read (the memory there holds NaN): in the last row the row y0 + 1 is "
            "row H, off the map, and reads 0 without a load (test y0 + 1 < H); likewise the column x0 + 1 with W"
        )
    if value != 0.0 and near(value):
        return "the mask is left out: the tap returns the bilinear value times m"
    ys, xs = oy + (x - ox), ox + (y - oy)  # where the sample lands with dy and dx swapped
    swapped = m * value_reference(rows, ys, xs)
    if swapped != 0.0 and near(swapped):
        return (
            "dy and dx are swapped: dy moves the sample along y (down the rows), dx along x (across the columns); "
            "y = oy * stride_h - pad_h + i * dilation_h + dy"
        )
    if kind == OFF:
        return "a sample with y <= -1, y >= H, x <= -1 or x >= W reads 0: no pixel of the map is within its reach"
    if kind == "between -1 and 0":
        if got == 0.0:
            return (
                "a sample between -1 and 0 still reads row 0 (column 0), weighted ly: only y <= -1 (x <= -1) reads "
                "0. Its row y0 = floor(y) = -1 is the one off the map, which reads 0"
            )
        if near(m * value_reference(rows, y, x, rounding=int)):
            return (
                "y0 = floor(y), not int64_t(y): int64_t(-0.5) is 0 (it rounds toward zero), so ly = y - y0 comes out "
                "negative; floor(-0.5) is -1, a row off the map, which reads 0"
            )
        return "between -1 and 0, y0 = floor(y) = -1: row -1 is off the map and reads 0, row 0 gets the weight ly"
    if got == 0.0 and kind in ("inside", "at whole pixels"):
        return (
            "the sample lies on the map, but the tap returned 0: it is the bilinear value of the four pixels around "
            "(y, x), weighted by how near the sample is to each, times m"
        )
    if kind == "in the last row or column":
        return (
            "in the last row, the row y0 + 1 = H is off the map: it reads 0 (zero padding; the sample is not clamped "
            "onto the last row as RoIAlign's are), and row H - 1 gets the weight hy = 1 - ly; likewise the last "
            "column"
        )
    if kind == "at whole pixels":
        return (
            "at a whole-pixel y, y0 = y and ly = 0: the sample reads row y alone (times m); likewise x. Check that "
            "ly = y - floor(y) and that row y0 gets hy = 1 - ly"
        )
    h, w = len(rows), len(rows[0])
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0
    flipped = m * value_reference(rows, y0 + 1 - ly, x0 + 1 - lx)  # the low and high neighbours' weights swapped
    if 0 <= y0 < h - 1 and 0 <= x0 < w - 1 and near(flipped):
        return "the weights are swapped: row y0 gets hy = 1 - ly, row y0 + 1 gets ly; column x0 gets hx, x0 + 1 lx"
    return (
        "the four pixels are (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1) with the weights hy * hx, "
        "hy * lx, ly * hx, ly * lx (ly = y - y0, hy = 1 - ly); pixel (row, col) is plane[row * W + col]; times m"
    )


# where the taps sample: a 3 x 2 kernel, strided, padded and dilated differently along y and x, on a 9 x 11 map
TAPS_MAP = (9, 11)
TAPS = dict(kernel=(3, 2), stride=(2, 1), padding=(1, 2), dilation=(3, 2))


def grid(oy, ox, i, j, dy, dx, kernel, stride, padding, dilation):
    """Where tap (i, j) of output pixel (oy, ox) samples, moved by (dy, dx)."""
    return (
        oy * stride[0] - padding[0] + i * dilation[0] + dy,
        ox * stride[1] - padding[1] + j * dilation[1] + dx,
    )


def swap(p):
    return (p[1], p[0])


# plausible wrong positions (what is wrong, where it samples), for the hint
WRONG_POSITIONS = [
    (
        "the stride and the dilation are swapped: the stride steps from one output pixel to the next "
        "(oy * stride_h), the dilation from one tap to the next (i * dilation_h)",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dy, dx, k, d, p, s),
    ),
    (
        "the padding is added: the grid starts pad_h before the map (oy * stride_h - pad_h), so output pixel 0's "
        "first tap is at -pad_h",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dy, dx, k, s, (-p[0], -p[1]), d),
    ),
    (
        "i and j are swapped: i is the tap's row (along y, with the _h sizes), j its column (along x)",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, j, i, dy, dx, k, s, p, d),
    ),
    (
        "the _h and _w sizes are swapped: y goes with stride_h, pad_h and dilation_h, x with the _w ones",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dy, dx, k, swap(s), swap(p), swap(d)),
    ),
    (
        "the dilation is left out: the taps are dilation_h pixels apart (i * dilation_h)",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dy, dx, k, s, p, (1, 1)),
    ),
    (
        "the stride is left out: output pixels are stride_h pixels apart on the map (oy * stride_h)",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dy, dx, k, (1, 1), p, d),
    ),
    (
        "dy and dx are swapped: dy moves the sample along y (down the rows), dx along x",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dx, dy, k, s, p, d),
    ),
    (
        "the offset is left out: the sample is the grid point moved by (dy, dx)",
        lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, 0.0, 0.0, k, s, p, d),
    ),
]


def where_taps_sample(op, dtype, dev):
    """Each tap of TAPS on two planes, one holding each pixel's row, the other its column (so a sample on the map
    reads its own position: bilinear interpolation is exact on them), the offsets quarters in [-1.5, 1.5], no mask.
    Returns [(i, j, oy, ox, dy, dx, (y, x) expected, (row, col) read)] for the taps that sample within the map's
    first and last pixels."""
    h, w = TAPS_MAP
    rows = torch.arange(h, dtype=torch.float64).view(h, 1).expand(h, w)
    cols = torch.arange(w, dtype=torch.float64).view(1, w).expand(h, w)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = TAPS["kernel"], TAPS["stride"], TAPS["padding"], TAPS["dilation"]
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    kk = kh * kw
    g = torch.Generator().manual_seed(14)
    offset = torch.randint(-6, 7, (1, 2 * kk, oh, ow), generator=g).double() / 4
    planes = torch.stack([rows, cols])[None].to(dev, dtype)
    got = op(planes, offset.to(dev, dtype), *TAPS.values()).double().cpu()
    taps = []
    for k in range(kk):
        i, j = divmod(k, kw)
        for oy in range(oh):
            for ox in range(ow):
                dy, dx = float(offset[0, 2 * k, oy, ox]), float(offset[0, 2 * k + 1, oy, ox])
                y, x = grid(oy, ox, i, j, dy, dx, **TAPS)
                if 0 <= y <= h - 1 and 0 <= x <= w - 1:
                    p = oy * ow + ox
                    taps.append((i, j, oy, ox, dy, dx, (y, x), (float(got[k, p]), float(got[kk + k, p]))))
    return taps


def position_hint(taps):
    """The wrong positions (one along y, one along x, or the right one along an axis) that every tap's reading agrees
    with, named, where some do."""
    h, w = TAPS_MAP
    right = ("", lambda oy, ox, i, j, dy, dx, k, s, p, d: grid(oy, ox, i, j, dy, dx, k, s, p, d))
    for (why_y, along_y), (why_x, along_x) in itertools.product([right, *WRONG_POSITIONS], repeat=2):
        if not (why_y or why_x):
            continue
        seen = 0
        for i, j, oy, ox, dy, dx, _, read in taps:
            y = along_y(oy, ox, i, j, dy, dx, *TAPS.values())[0]
            x = along_x(oy, ox, i, j, dy, dx, *TAPS.values())[1]
            if 0 <= y <= h - 1 and 0 <= x <= w - 1:  # where a sample on the planes reads its own row and column
                seen += 1
                if not (math.isclose(read[0], y, abs_tol=1e-4) and math.isclose(read[1], x, abs_tol=1e-4)):
                    break
        else:
            if seen:
                return (
                    why_y
                    if why_y == why_x
                    else " ".join(f"Along {axis}: {why}." for axis, why in (("y", why_y), ("x", why_x)) if why)
                )
    return (
        "tap (i, j) of output pixel (oy, ox) samples at y = oy * stride_h - pad_h + i * dilation_h + dy, "
        "x = ox * stride_w - pad_w + j * dilation_w + dx"
    )


CASES = [  # N, C, H, W, kernel, stride, padding, dilation, offset groups
    (2, 4, 7, 9, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    (1, 3, 8, 6, (2, 3), (2, 1), (0, 2), (2, 1), 1),
    (2, 2, 5, 5, (3, 1), (1, 2), (2, 0), (1, 3), 2),
]


def random_case(i, dtype, dev):
    """Case i's input, offset and mask: offsets of a few pixels, 30% of them whole pixels, 5% far off the map. The input
    lies amid NaN, so a read a row off the map shows as NaN rather than ending the GPU's context."""
    n, c, h, w, (kh, kw), (sh, sw), (ph, pw), (dh, dw), groups = CASES[i]
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    g = torch.Generator().manual_seed(1400 + i)
    x = torch.randn(n, c, h, w, generator=g, dtype=torch.float64)
    offset = torch.randn(n, groups * kh * kw * 2, oh, ow, generator=g, dtype=torch.float64) * 2
    whole = torch.rand(offset.shape, generator=g) < 0.3
    offset[whole] = offset[whole].round()
    far = torch.rand(offset.shape, generator=g) < 0.05
    offset[far] *= 30
    mask = torch.rand(n, groups * kh * kw, oh, ow, generator=g, dtype=torch.float64) * 1.5
    return amid_nan(x.to(dev, dtype)), offset.to(dev, dtype), mask.to(dev, dtype)


def columns_by_torchvision(torchvision, x, offset, mask, kernel, stride, padding, dilation):
    """The columns, read off torchvision.ops.deform_conv2d: with a one-hot weight, output channel c * kk + k is
    channel c's tap k, and the output is the columns, image by image."""
    n, c = x.shape[:2]
    kk = kernel[0] * kernel[1]
    weight = torch.eye(c * kk, dtype=x.dtype, device=x.device).view(c * kk, c, *kernel)
    out = torchvision.ops.deform_conv2d(x, offset, weight, None, stride, padding, dilation, mask)
    return out.permute(1, 0, 2, 3).reshape(c * kk, -1)


def grade(ops, kit_root):
    report, op = begin(ops, "ex14_deform_sample", EDIT)
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
                for kind, y, x, m, oy, ox, got in sorted(results, key=lambda r: KINDS.index(r[0])):
                    e = m * value_reference(rows, y, x)
                    if math.isnan(got) and outside_read is None:
                        outside_read = (h, w, y, x)
                    if not close(e, got, dtype) and failure is None:
                        failure = (h, w, kind, y, x, m, oy, ox, e, got, rows)
            name = f"samples at awkward points on {dev}, {dname}"
            if failure:
                h, w, kind, y, x, m, oy, ox, e, got, rows = failure
                report.add(
                    name,
                    False,
                    f"on a {h} x {w} plane, output pixel (oy, ox) = ({oy}, {ox}) of a 1 x 1 kernel (stride 1, no "
                    f"padding) with the offset (dy, dx) = ({y - oy:g}, {x - ox:g}) and the mask {m:g} samples at "
                    f"(y, x) = ({y:g}, {x:g}) ({kind}): it should read {e:.6g}, got {got:.6g}",
                    hint(kind, rows, y, x, m, oy, ox, got),
                )
            else:
                report.add(name, True, f"{sum(len(points(h, w)) for h, w in PLANES)} points, on {len(PLANES)} planes")

            taps = where_taps_sample(op, dtype, dev)
            wrong = [t for t in taps if not all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(t[6], t[7]))]
            name = f"each tap samples where it should on {dev}, {dname}"
            if wrong:
                i, j, oy, ox, dy, dx, (y, x), (gy, gx) = wrong[0]
                sizes = ", ".join(f"{k} {v}" for k, v in TAPS.items())
                report.add(
                    name,
                    False,
                    f"{sizes}: tap (i, j) = ({i}, {j}) of output pixel (oy, ox) = ({oy}, {ox}), with the offset "
                    f"(dy, dx) = ({dy:g}, {dx:g}), should sample at (y, x) = ({y:g}, {x:g}), but read row {gy:.4g} "
                    f"and column {gx:.4g} from planes that hold each pixel's row and column",
                    "fix the samples at awkward points first (above)"
                    if report.results[-1].status == "fail"
                    else position_hint(taps),
                )
            else:
                report.add(name, True, f"{len(taps)} taps of a {TAPS['kernel']} kernel on the map")

            name = f"matches torchvision.ops.deform_conv2d on {dev}, {dname}"
            if torchvision is None:
                report.skip(name, "torchvision is not installed here (pip install torchvision: requirements.txt)")
                continue
            failure = None
            for i, case in enumerate(CASES):
                kernel, stride, padding, dilation = case[4:8]
                x, offset, mask = random_case(i, dtype, dev)
                ref = columns_by_torchvision(torchvision, x, offset, mask, kernel, stride, padding, dilation)
                got = op(x, offset, kernel, stride, padding, dilation, mask=mask)
                tol = 1e-12 if dtype == torch.float64 else 1e-5
                bad = ~torch.isclose(got, ref, rtol=tol, atol=tol)
                if bad.any():
                    row, col = (int(v) for v in bad.nonzero()[0])
                    failure = (i, row, col, float(ref[row, col]), float(got[row, col]), offset, mask)
                    break
            if failure:
                i, row, col, e, got, offset, mask = failure
                n, c, h, w, kernel, stride, padding, dilation, groups = CASES[i]
                kk, oh, ow = kernel[0] * kernel[1], offset.shape[2], offset.shape[3]
                ch, k, b, p = row // kk, row % kk, col // (oh * ow), col % (oh * ow)
                g, (oy, ox), (ti, tj) = ch // (c // groups), divmod(p, ow), divmod(k, kernel[1])
                dy, dx = (float(offset[b, (g * kk + k) * 2 + a, oy, ox]) for a in (0, 1))
                y, xx = grid(oy, ox, ti, tj, dy, dx, kernel, stride, padding, dilation)
                report.add(
                    name,
                    False,
                    f"{n} x {c} x {h} x {w} input, kernel {kernel}, stride {stride}, padding {padding}, dilation "
                    f"{dilation}, {groups} offset group(s): image {b}, channel {ch}, tap (i, j) = ({ti}, {tj}) of "
                    f"output pixel ({oy}, {ox}), offset ({dy:.6g}, {dx:.6g}), mask "
                    f"{float(mask[b, g * kk + k, oy, ox]):.4g}, so the sample at (y, x) = ({y:.6g}, {xx:.6g}): "
                    f"should read {e:.6g}, got {got:.6g}",
                    "fix the checks above first"
                    if any(r.status == "fail" and r.check.endswith(f"on {dev}, {dname}") for r in report.results)
                    else "each tap is the bilinear value at its grid point moved by its offset, times its mask: check "
                    "the rules against the spec (the offset group's channels share one offset and mask)",
                )
            else:
                report.add(name, True, f"{len(CASES)} cases, the columns read off torchvision with one-hot weights")
        if outside_read:
            h, w, y, x = outside_read
            report.add(
                f"reads nothing outside the map on {dev}",
                False,
                f"on a {h} x {w} plane with NaN in the memory around it, the sample at (y, x) = ({y:g}, {x:g}) came "
                f"out NaN: a pixel outside the map was read",
                "a pixel off the map reads 0 without a load: row y0 only where y0 >= 0, row y0 + 1 only where "
                "y0 + 1 < H (in the last row it is row H); likewise the columns with x0 >= 0 and x0 + 1 < W",
            )
        else:
            report.add(f"reads nothing outside the map on {dev}", True, "with NaN in the memory around the map")
    return report
