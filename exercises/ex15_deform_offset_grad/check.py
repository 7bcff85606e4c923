"""Exercise 15: deformable convolution's offset gradient.

A deformable convolution learns its offsets, so it needs their gradient: how each column entry (exercise 14's
`m * value` at the sample (y, x)) changes as its offset moves the sample. Along y the bilinear value is a straight
line between two rows, so the answer is a slope. Write `sample_slopes` in `ex15_deform_offset_grad.h` (roughly 9
lines): `dy`, the slope of the value along y, and `dx`, along x, with torchvision's rules:
- a sample that reaches no pixel of the map, `y < -1`, `y >= H`, `x < -1` or `x >= W`, has both slopes 0; but
  `y = -1` (or `x = -1`) still reaches row 0 (column 0): its value is 0 there, its slope is not;
- else with `y0 = floor(y)`, `x0 = floor(x)`, `ly = y - y0`, `lx = x - x0` and the four pixels `pixel(plane, H, W,
  row, col)` (given: 0 for a pixel off the map, exercise 14's zero padding):
  `dy = (1 - lx) * ((y0 + 1, x0) - (y0, x0)) + lx * ((y0 + 1, x0 + 1) - (y0, x0 + 1))`, the rows' difference read at
  x, and `dx = (1 - ly) * ((y0, x0 + 1) - (y0, x0)) + ly * ((y0 + 1, x0 + 1) - (y0 + 1, x0))`, the columns'
  difference read at y;
- at a whole pixel (y = y0, where the value has a kink) that is the slope on the side of the larger coordinate, as
  floor makes it; in the last row, row y0 + 1 = H reads 0, so the slope there is 0 - (row H - 1).
The rest is given: each element of the offsets' gradient finds its sample (exercise 14's position) and sums
`mask * slope * grad_columns` over the channels of its offset group, one GPU thread per element, as torchvision's
kernel does. float32 and float64; the CPU runs the same code, so a laptop can do this exercise too.

Checked on every device here: at awkward points (inside, at whole pixels, between -1 and 0, exactly at -1, in the
last row and column, at H and W and far off the map; on a 5 x 7 plane and a 1 x 3 one) against an independent float64
reference, with NaN in the memory around the map (a read outside it is caught); against the value's finite
differences in float64 at random points away from the kinks; and against the offsets' gradient of
`torchvision.ops.deform_conv2d` (autograd) on random offsets, whole pixels and far-off samples among them, one and
two offset groups, several strides, paddings and dilations.

The second exercise of 09_deformable_conv.ipynb; grade it with `check("ex15_deform_offset_grad")` in a notebook, or
`python -m kit.grade ex15_deform_offset_grad`."""

import math

import torch

from kit.checks import PAD, amid_nan, begin, devices

NUMBER = 15  # its place in the lessons
EDIT = "exercises/ex15_deform_offset_grad/ex15_deform_offset_grad.h"  # the file to edit

PLANES = [(5, 7), (1, 3)]
OFF = "at H or W, or off the map"
KINDS = ["inside", "at whole pixels", "between -1 and 0", "exactly at -1", "in the last row or column", OFF]


def points(h, w):
    """(what kind of point, y, x) on an h x w plane: one kind after another, so the first failure names the rule."""
    if h == 1:  # a map of one row: every point on it is in the last row
        return [
            ("between -1 and 0", -0.5, 1.25),
            ("exactly at -1", -1.0, 0.5),
            ("exactly at -1", 0.5, -1.0),
            ("in the last row or column", 0.5, 0.75),
            ("in the last row or column", 0.0, 1.0),
            ("in the last row or column", 0.25, w - 0.5),
            (OFF, 1.0, 1.5),
            (OFF, 0.5, float(w)),
        ]
    return [
        ("inside", 1.25, 2.75),
        ("inside", 0.5, 0.25),
        ("inside", h - 1.5, w - 1.75),
        ("at whole pixels", 2.0, 3.0),
        ("at whole pixels", 2.0, 1.5),
        ("at whole pixels", 1.25, 4.0),
        ("at whole pixels", 0.0, 0.0),
        ("at whole pixels", h - 2.0, w - 2.0),
        ("between -1 and 0", -0.5, 1.25),
        ("between -1 and 0", 1.5, -0.25),
        ("between -1 and 0", -0.75, -0.5),
        ("exactly at -1", -1.0, 1.5),
        ("exactly at -1", 2.25, -1.0),
        ("exactly at -1", -1.0, -1.0),
        ("exactly at -1", -1.0, 3.0),
        ("in the last row or column", h - 0.5, 1.25),
        ("in the last row or column", 1.75, w - 0.25),
        ("in the last row or column", h - 1.0, 2.5),
        ("in the last row or column", 1.5, w - 1.0),
        ("in the last row or column", h - 0.25, w - 0.5),
        (OFF, float(h), 1.5),
        (OFF, 1.5, float(w)),
        (OFF, h + 0.25, 0.5),
        (OFF, -1.25, 1.5),
        (OFF, 0.5, -1.5),
        (OFF, -40.5, 2.0),
        (OFF, 2.0, w + 30.25),
        (OFF, 1000.0, -1000.0),
    ]


def pixels(rows, y0, x0):
    """The four pixels from (y0, x0) on, 0 off the map: (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)."""
    h, w = len(rows), len(rows[0])

    def at(r, c):
        return rows[r][c] if 0 <= r < h and 0 <= c < w else 0.0

    return at(y0, x0), at(y0, x0 + 1), at(y0 + 1, x0), at(y0 + 1, x0 + 1)


def value_reference(rows, y, x):
    """The bilinear value at (y, x) by torchvision's rules (exercise 14's, without the mask), in float64."""
    h, w = len(rows), len(rows[0])
    if y <= -1 or y >= h or x <= -1 or x >= w:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0
    v00, v01, v10, v11 = pixels(rows, y0, x0)
    return (1 - ly) * (1 - lx) * v00 + (1 - ly) * lx * v01 + ly * (1 - lx) * v10 + ly * lx * v11


def slopes_reference(rows, y, x, low=math.floor, flip=False):
    """(d value / dy, d value / dx) at (y, x) by torchvision's rules, in float64. For the hints: low=int gives what
    truncation toward zero would find, low=lambda v: math.ceil(v) - 1 the slopes on the side of the smaller
    coordinate at a whole pixel, flip=True the weights 1 - l and l swapped."""
    h, w = len(rows), len(rows[0])
    if y < -1 or y >= h or x < -1 or x >= w:
        return 0.0, 0.0
    y0, x0 = low(y), low(x)
    ly, lx = y - y0, x - x0
    if flip:
        ly, lx = 1 - ly, 1 - lx
    v00, v01, v10, v11 = pixels(rows, y0, x0)
    return (1 - lx) * (v10 - v00) + lx * (v11 - v01), (1 - ly) * (v01 - v00) + ly * (v11 - v10)


def probe(op, h, w, pts, dtype, dev):
    """Each point (kind, y, x) of pts sampled by op: one channel, a 1 x 1 kernel (stride 1, no padding), output pixel
    (oy, ox) moved to the point by the offset (y - oy, x - ox), mask 1 and grad_columns 1, so that the gradient of the
    offset is the slope itself; as many points a call as the map has pixels. The plane lies in the middle of a buffer
    of NaN, so a read outside it shows. Returns (the plane as lists, [(kind, y, x, oy, ox, (dy, dx))])."""
    plane = torch.randn(h, w, generator=torch.Generator().manual_seed(h * 100 + w + 15), dtype=torch.float64)
    buf = torch.full((PAD + h * w + PAD,), float("nan"), dtype=dtype, device=dev)
    view = buf[PAD : PAD + h * w]
    view.copy_(plane.flatten())
    results = []
    for start in range(0, len(pts), h * w):
        chunk = pts[start : start + h * w]
        offset = torch.zeros(1, 2, h, w, dtype=torch.float64)
        for s, (_, y, x) in enumerate(chunk):
            oy, ox = divmod(s, w)
            offset[0, :, oy, ox] = torch.tensor([y - oy, x - ox], dtype=torch.float64)
        ones = torch.ones(1, h * w, dtype=dtype, device=dev)
        grad = op(ones, view.view(1, 1, h, w), offset.to(dev, dtype), 1).double().cpu()
        for s, (kind, y, x) in enumerate(chunk):
            oy, ox = divmod(s, w)
            results.append((kind, y, x, oy, ox, (float(grad[0, 0, oy, ox]), float(grad[0, 1, oy, ox]))))
    return plane.tolist(), results


def close(expected, got, dtype):
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    return all(math.isclose(g, e, rel_tol=tol, abs_tol=tol) for e, g in zip(expected, got))  # NaN is never close


def hint(kind, rows, y, x, got):
    """What the rule for this kind of point says, told from what the answer got."""
    want = slopes_reference(rows, y, x)

    def like(other):
        """Each slope got is the right one or `other`'s, and one of them `other`'s alone (a mistake along one axis
        shows in that axis's slope only)."""
        near = [[close((v,), (g,), torch.float32) for v in (w, o)] for w, o, g in zip(want, other, got)]
        return all(r or o for r, o in near) and any(o and not r for r, o in near)

    if any(math.isnan(g) for g in got):
        return (
            "NaN: a pixel outside the map was read (the memory there holds NaN): read the four pixels with "
            "pixel(plane, H, W, row, col), which gives 0 for a pixel off the map without a load"
        )
    if like(want[::-1]) and close(want[::-1], got, torch.float32):
        return (
            "dy and dx are swapped: dy is the slope along y (the difference of the rows), dx along x (of the columns)"
        )
    if kind == OFF:
        return "a sample with y < -1, y >= H, x < -1 or x >= W reaches no pixel of the map: both slopes are 0"
    if kind == "exactly at -1":
        if got == (0.0, 0.0):
            return (
                "a sample exactly at y = -1 reads 0, but it still reaches row 0: moved down a little, its value "
                "grows with row 0, so dy is row 0's value (read at x) - 0. Only y < -1 (not y <= -1, the value's "
                "test) has no slope; likewise x = -1"
            )
        return "at y = -1, y0 = floor(y) = -1 (a row off the map, reading 0) and ly = 0: dy is row 0 (read at x) - 0"
    if kind == "between -1 and 0":
        if like(slopes_reference(rows, y, x, low=int)):
            return (
                "y0 = floor(y), not int64_t(y): int64_t(-0.5) is 0 (it rounds toward zero), so the slope comes out "
                "as row 1 - row 0; floor(-0.5) is -1, and dy is row 0 - row -1 (which reads 0)"
            )
        return (
            "between -1 and 0, y0 = floor(y) = -1: row -1 is off the map and reads 0 (pixel() gives 0 there), so dy "
            "is row 0 (read at x) - 0; likewise x0 = -1 for x between -1 and 0"
        )
    if kind == "at whole pixels" and like(slopes_reference(rows, y, x, low=lambda v: math.ceil(v) - 1)):
        return (
            "at a whole pixel the slope is the one on the side of the larger coordinate: y0 = floor(y) = y itself and "
            "ly = 0, so dy is row y + 1 - row y (torchvision's rule), not row y - row y - 1"
        )
    if kind == "in the last row or column":
        return (
            "in the last row, row y0 + 1 = H is off the map and reads 0 (zero padding; nothing is clamped onto the "
            "last row, as RoIAlign does): dy is 0 - row H - 1 (read at x), not 0; likewise the last column"
        )
    if like(slopes_reference(rows, y, x, flip=True)):
        return (
            "the weights are swapped: dy is (1 - lx) times column x0's difference of the rows plus lx times column "
            "x0 + 1's; dx is (1 - ly) times row y0's difference of the columns plus ly times row y0 + 1's"
        )
    if kind == "at whole pixels":
        return "at a whole pixel, y0 = floor(y) = y and ly = 0: dy is row y + 1 - row y, read at x"
    return (
        "dy = (1 - lx) * ((y0 + 1, x0) - (y0, x0)) + lx * ((y0 + 1, x0 + 1) - (y0, x0 + 1)), dx likewise with the "
        "columns: (1 - ly) * ((y0, x0 + 1) - (y0, x0)) + ly * ((y0 + 1, x0 + 1) - (y0 + 1, x0))"
    )


def random_points(h, w, k, seed):
    """k points of (-1, H) x (-1, W), each coordinate at least 0.01 from a whole pixel (from the value's kinks)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    while len(out) < k:
        y, x = (torch.rand(2, generator=g, dtype=torch.float64) * torch.tensor([h + 1.0, w + 1.0]) - 1).tolist()
        if min(abs(y - round(y)), abs(x - round(x))) > 0.01:
            out.append(("random", y, x))
    return out


EPS = 1e-6  # the finite differences' step


def finite_differences(rows, y, x):
    v = value_reference
    return (
        (v(rows, y + EPS, x) - v(rows, y - EPS, x)) / (2 * EPS),
        (v(rows, y, x + EPS) - v(rows, y, x - EPS)) / (2 * EPS),
    )


CASES = [  # N, C, H, W, kernel, stride, padding, dilation, offset groups
    (2, 4, 7, 9, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    (1, 3, 8, 6, (2, 3), (2, 1), (0, 2), (2, 1), 1),
    (2, 2, 5, 5, (3, 1), (1, 2), (2, 0), (1, 3), 2),
]


def random_case(i, dtype, dev):
    """Case i's input, offset, mask and the gradient of its output: offsets of a few pixels, 30% of them whole pixels
    (which put samples exactly at -1, on the last row, at H), 5% far off the map. The input lies amid NaN, so a read a
    row off the map shows as NaN rather than ending the GPU's context."""
    n, c, h, w, (kh, kw), (sh, sw), (ph, pw), (dh, dw), groups = CASES[i]
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    g = torch.Generator().manual_seed(1500 + i)
    x = torch.randn(n, c, h, w, generator=g, dtype=torch.float64)
    offset = torch.randn(n, groups * kh * kw * 2, oh, ow, generator=g, dtype=torch.float64) * 2
    whole = torch.rand(offset.shape, generator=g) < 0.3
    offset[whole] = offset[whole].round()
    far = torch.rand(offset.shape, generator=g) < 0.05
    offset[far] *= 30
    mask = torch.rand(n, groups * kh * kw, oh, ow, generator=g, dtype=torch.float64) * 1.5
    grad_out = torch.randn(n, c * kh * kw, oh, ow, generator=g, dtype=torch.float64)
    return amid_nan(x.to(dev, dtype)), offset.to(dev, dtype), mask.to(dev, dtype), grad_out.to(dev, dtype)


def torchvision_offset_grad(torchvision, x, offset, mask, grad_out, kernel, stride, padding, dilation):
    """The gradient of the offsets by autograd through torchvision.ops.deform_conv2d with a one-hot weight, whose
    output channel c * kk + k is the columns' row c * kk + k: grad_out is then the gradient of the columns."""
    c, kk = x.shape[1], kernel[0] * kernel[1]
    weight = torch.eye(c * kk, dtype=x.dtype, device=x.device).view(c * kk, c, *kernel)
    offset = offset.clone().requires_grad_()
    out = torchvision.ops.deform_conv2d(x, offset, weight, None, stride, padding, dilation, mask)
    (grad,) = torch.autograd.grad(out, offset, grad_out)
    return grad


def grade(ops, kit_root):
    report, op = begin(ops, "ex15_deform_offset_grad", EDIT)
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
                rows, results = probe(op, h, w, points(h, w), dtype, dev)
                for kind, y, x, oy, ox, got in sorted(results, key=lambda r: KINDS.index(r[0])):
                    if any(math.isnan(g) for g in got) and outside_read is None:
                        outside_read = (h, w, y, x)
                    if not close(slopes_reference(rows, y, x), got, dtype) and failure is None:
                        failure = (h, w, kind, y, x, oy, ox, got, rows)
            name = f"slopes at awkward points on {dev}, {dname}"
            if failure:
                h, w, kind, y, x, oy, ox, got, rows = failure
                e = slopes_reference(rows, y, x)
                report.add(
                    name,
                    False,
                    f"on a {h} x {w} plane, output pixel (oy, ox) = ({oy}, {ox}) of a 1 x 1 kernel (stride 1, no "
                    f"padding) with the offset (dy, dx) = ({y - oy:g}, {x - ox:g}) samples at (y, x) = ({y:g}, {x:g}) "
                    f"({kind}): its slopes (dy, dx) should be ({e[0]:.6g}, {e[1]:.6g}), got ({got[0]:.6g}, "
                    f"{got[1]:.6g})",
                    hint(kind, rows, y, x, got),
                )
            else:
                report.add(name, True, f"{sum(len(points(h, w)) for h, w in PLANES)} points, on {len(PLANES)} planes")

        # the slopes are the value's derivative: finite differences in float64, away from the kinks
        h, w = PLANES[0]
        rows, results = probe(op, h, w, random_points(h, w, 30, seed=15), torch.float64, dev)
        name = f"slopes are the value's derivative on {dev}, float64"
        for _, y, x, _, _, got in results:
            e = finite_differences(rows, y, x)
            if not all(math.isclose(g, v, rel_tol=1e-7, abs_tol=1e-7) for g, v in zip(got, e)):
                report.add(
                    name,
                    False,
                    f"on a {h} x {w} plane at (y, x) = ({y:.6g}, {x:.6g}): the value's finite differences (step "
                    f"{EPS:g}) give the slopes (dy, dx) = ({e[0]:.6g}, {e[1]:.6g}), got ({got[0]:.6g}, {got[1]:.6g})",
                    "fix the slopes at awkward points first (above)"
                    if any(
                        r.status == "fail" and r.check.startswith(f"slopes at awkward points on {dev}")
                        for r in report.results
                    )
                    else "dy is how fast the value hy * hx * (y0, x0) + hy * lx * (y0, x0 + 1) + ly * hx * (y0 + 1, x0) + "
                    "ly * lx * (y0 + 1, x0 + 1) changes with y: the weights' derivatives along y are -hx, -lx, hx, lx",
                )
                break
        else:
            report.add(name, True, f"{len(results)} random points, each coordinate at least 0.01 from a whole pixel")

        for dtype in (torch.float64, torch.float32):
            dname = str(dtype).replace("torch.", "")
            name = f"gradient matches torchvision's on {dev}, {dname}"
            if torchvision is None:
                report.skip(name, "torchvision is not installed here (pip install torchvision: requirements.txt)")
                continue
            failure = None
            for i, case in enumerate(CASES):
                kernel, stride, padding, dilation = case[4:8]
                x, offset, mask, grad_out = random_case(i, dtype, dev)
                ref = torchvision_offset_grad(torchvision, x, offset, mask, grad_out, kernel, stride, padding, dilation)
                grad_columns = grad_out.permute(1, 0, 2, 3).reshape(grad_out.shape[1], -1)
                got = op(grad_columns, x, offset, kernel, stride, padding, dilation, mask=mask)
                tol = dict(rtol=1e-10, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
                bad = ~torch.isclose(got, ref, **tol)
                if bad.any():
                    at = tuple(int(v) for v in bad.nonzero()[0])
                    failure = (i, at, float(ref[at]), float(got[at]), offset)
                    break
            if failure:
                i, (b, ch, oy, ox), e, got, offset = failure
                n, c, h, w, kernel, stride, padding, dilation, groups = CASES[i]
                kk = kernel[0] * kernel[1]
                g, k, along = ch // (2 * kk), (ch // 2) % kk, "dx" if ch % 2 else "dy"
                ti, tj = divmod(k, kernel[1])
                dy, dx = (float(offset[b, (g * kk + k) * 2 + a, oy, ox]) for a in (0, 1))
                y = oy * stride[0] - padding[0] + ti * dilation[0] + dy
                xx = ox * stride[1] - padding[1] + tj * dilation[1] + dx
                report.add(
                    name,
                    False,
                    f"{n} x {c} x {h} x {w} input, kernel {kernel}, stride {stride}, padding {padding}, dilation "
                    f"{dilation}, {groups} offset group(s): the gradient of {along} of image {b}, offset group {g}, "
                    f"tap (i, j) = ({ti}, {tj}) at output pixel ({oy}, {ox}) (offset ({dy:.6g}, {dx:.6g}), so the "
                    f"samples at (y, x) = ({y:.6g}, {xx:.6g})) should be {e:.6g}, got {got:.6g}",
                    "fix the checks above first"
                    if any(r.status == "fail" and r.check.startswith("slopes") for r in report.results)
                    else "the given sum is mask * slope * grad_columns over the group's channels: check the slopes "
                    "at the kind of point named here (a whole pixel, -1, the last row or column) against the spec",
                )
            else:
                report.add(name, True, f"{len(CASES)} cases, against autograd through torchvision.ops.deform_conv2d")
        if outside_read:
            h, w, y, x = outside_read
            report.add(
                f"reads nothing outside the map on {dev}",
                False,
                f"on a {h} x {w} plane with NaN in the memory around it, the slopes at (y, x) = ({y:g}, {x:g}) came "
                f"out NaN: a pixel outside the map was read",
                "read the four pixels with pixel(plane, H, W, row, col): a pixel off the map reads 0 without a load",
            )
        else:
            report.add(f"reads nothing outside the map on {dev}", True, "with NaN in the memory around the map")
    return report
