"""Exercise 13: RoIAlign's backward, the scatter.

RoIAlign's forward gathers: each sample of a bin reads four pixels around its point, with bilinear weights. Its
backward is the same sums read backwards: each sample hands its share `g` of its bin's gradient (`grad_out` of the
bin / the bin's sample count) back to the four pixels it read, each `g` times the weight it was read with. Write
`scatter_sample` in `ex13_roi_scatter.h` (roughly 7 lines):
- the point's pixels and weights are `neighbours(H, W, y, x)` (given: exercise 12's edge rules): (y_low, x_low)
  weighs `hy * hx`, (y_low, x_high) `hy * lx`, (y_high, x_low) `ly * hx`, (y_high, x_high) `ly * lx`;
- a point off the map (`inside` false: its pixels are -1, outside the plane) hands back nothing;
- pixel (row, col) of the plane is `plane[row * W + col]`, and each add is an `atomic_add` (given): on the GPU one
  thread runs per element of `grad_out`, and the samples of different bins and boxes share pixels, so many threads
  add into one pixel at once (a plain `+=` there loses adds).
The rest is given: the forward, and the backward's loop over each bin's samples (one GPU thread per element of
`grad_out`, as torchvision's kernel); autograd calls it. float32 and float64; the CPU runs the same code (one
thread after another), so a laptop can do this exercise too.

Checked on every device here: first with the gradient in the middle of a buffer of -0.0 (any add outside it, even
of 0, turns a -0.0 into +0.0 and is caught; a kernel that writes outside is run no further, since elsewhere its
writes would land in memory that is not the gradient's and could crash Python); then against torchvision's gradient
(autograd through `torchvision.ops.roi_align`) in float64 and float32, on random boxes (partly outside the map,
smaller than a pixel, inverted), aligned or not, several output sizes and sampling ratios; and with 400 boxes over
one small region (on a GPU, lost adds show there).

In 08_detection_ops.ipynb; grade it there with `check("ex13_roi_scatter")`, or `python -m kit.grade ex13_roi_scatter`."""

import math

import torch

from kit.checks import begin, devices

NUMBER = 13  # its place in the lessons
EDIT = "exercises/ex13_roi_scatter/ex13_roi_scatter.h"  # the file to edit
PAD = 64  # elements of -0.0 before and after the gradient

CASES = [  # output_size, spatial_scale, sampling_ratio, aligned
    ((7, 7), 1.0, -1, False),
    ((7, 7), 1.0, -1, True),
    ((3, 5), 0.5, 2, False),
    ((2, 4), 0.25, 0, True),
    ((5, 1), 2.0, 3, False),
]
SHAPE = (2, 3, 9, 11)  # N, C, H, W: W != H, so a row taken as H long lands elsewhere


def random_boxes(k, n, h, w, scale, seed):
    """k boxes in image coordinates (the map's size / scale): most inside, some partly or wholly outside, some
    smaller than a pixel, two inverted."""
    g = torch.Generator().manual_seed(seed)
    hh, ww = h / scale, w / scale
    xy = torch.rand(k, 2, generator=g, dtype=torch.float64) * torch.tensor([ww + 6, hh + 6]) - 3
    size = torch.rand(k, 2, generator=g, dtype=torch.float64) * torch.tensor([ww, hh]) * 0.6
    size[: k // 5] *= 0.02
    size[k // 5 : k // 5 + 2] *= -0.5
    index = torch.randint(0, n, (k, 1), generator=g).double()
    return torch.cat([index, xy, xy + size], dim=1)


def gradients(op, torchvision, x, boxes, grad_out, case):
    """(ours, torchvision's) gradient of the input for grad_out, by autograd through each forward."""
    xa = x.clone().requires_grad_()
    (ours,) = torch.autograd.grad(op(xa, boxes, *case), xa, grad_out)
    xb = x.clone().requires_grad_()
    (ref,) = torch.autograd.grad(torchvision.ops.roi_align(xb, boxes, *case), xb, grad_out)
    return ours, ref


def tolerance(dtype):
    return dict(rtol=1e-10, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)


def first_difference(ours, ref, dtype):
    """(index tuple, expected, got) of the first element off by more than rounding (NaN counts), or None."""
    bad = ~torch.isclose(ours, ref, **tolerance(dtype))
    if not bool(bad.any()):
        return None
    at = tuple(int(v) for v in bad.nonzero()[0])
    return at, float(ref[at]), float(ours[at])


def expected_weights(h, w, y, x):
    """{(row, col): weight} the sample at (y, x) hands back, by RoIAlign's rules (an independent float64 sum)."""
    if y < -1 or y > h or x < -1 or x > w:
        return {}
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y0, y1, y = (h - 1, h - 1, float(h - 1)) if y0 >= h - 1 else (y0, y0 + 1, y)
    x0, x1, x = (w - 1, w - 1, float(w - 1)) if x0 >= w - 1 else (x0, x0 + 1, x)
    ly, lx = y - y0, x - x0
    out = {}
    for (r, c), wt in [((y0, x0), (1 - ly) * (1 - lx)), ((y0, x1), (1 - ly) * lx), ((y1, x0), ly * (1 - lx))]:
        out[(r, c)] = out.get((r, c), 0.0) + wt
    out[(y1, x1)] = out.get((y1, x1), 0.0) + ly * lx
    return out


def one_sample(op, dev, h, w, y, x):
    """The gradient one sample at (y, x) hands back for grad_out = 1: a 1 x 1 output of a box centred on the point,
    one sample per bin. Returns {(row, col): value} of the pixels that got something."""
    plane = torch.zeros(1, 1, h, w, dtype=torch.float64, device=dev)
    box = torch.tensor([[0.0, x - 1, y - 1, x + 1, y + 1]], dtype=torch.float64, device=dev)
    torch.ops.labkit.ex13_roi_scatter_backward(
        torch.ones(1, 1, 1, 1, dtype=torch.float64, device=dev), box, 1.0, 1, 1, 1, False, plane
    )
    got = plane[0, 0].cpu()
    return {(int(r), int(c)): float(got[r, c]) for r, c in got.nonzero().tolist()}


def same(a, b):
    """Two {(row, col): value} gradients equal but for rounding."""
    return set(a) == set(b) and all(math.isclose(a[k], b[k], abs_tol=1e-12) for k in a)


def mirrored(v):
    """The coordinate whose weights are v's swapped: (1 - l) where v has l past its low pixel."""
    return int(v) + 1 - (v - int(v))


def diagnosis(op, dev):
    """The hint for a wrong gradient, told from what a single sample hands back (grad_out = 1, a 4 x 5 plane)."""
    h, w = 4, 5
    y, x = 1.25, 2.75  # weights 0.75, 0.25 along y; 0.25, 0.75 along x: every swap shows
    got, want = one_sample(op, dev, h, w, y, x), expected_weights(h, w, y, x)
    if same(got, want):
        return (
            "a single sample inside the map hands back the right weights; check the samples near the edges (the "
            "last row and column, where y_low == y_high) and that every add goes to plane[row * W + col]"
        )
    if not got:
        return "nothing came back: each of the four pixels gets g times its weight (atomic_add(&plane[...], ...))"
    for what, yy, xx in (
        ("rows", mirrored(y), x),
        ("columns", y, mirrored(x)),
        ("rows and columns", mirrored(y), mirrored(x)),
    ):
        if same(got, expected_weights(h, w, yy, xx)):
            return (
                f"the weights of the {what} are swapped: the pixel in row y_low gets hy (= 1 - ly), the one in row "
                f"y_high gets ly; column x_low gets hx (= 1 - lx), column x_high gets lx"
            )
    total = sum(got.values())
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        return (
            f"a sample with g = 1 handed back {total:.4g} in all: the four weights hy * hx, hy * lx, ly * hx, ly * lx "
            f"add up to 1, so the four adds together hand back exactly g"
        )
    if set(got) != set(want):
        return (
            f"a sample at (y, x) = ({y}, {x}) on a {h} x {w} plane should add into the pixels (row, col) "
            f"{sorted(want)}, but added into {sorted(got)}: pixel (row, col) is plane[row * W + col]"
        )
    return (
        "each pixel gets g times the weight the forward read it with: (y_low, x_low) hy * hx, (y_low, x_high) "
        "hy * lx, (y_high, x_low) ly * hx, (y_high, x_high) ly * lx"
    )


# Samples at the edges and off the map, one box each (a 1 x 1 output, one sample at (y, x)), on a 4 x 5 plane
EDGE_POINTS = [
    (3.0, 4.0),
    (3.5, 4.5),
    (4.0, 5.0),
    (2.0, 4.75),
    (3.25, 1.5),
    (-0.5, -0.5),
    (-1.0, 2.0),
    (-1.5, 2.0),
    (2.0, -1.5),
    (4.5, 2.0),
    (2.0, 5.5),
    (-3.0, -3.0),
]


def outside_writes(dev):
    """The gradient of EDGE_POINTS' samples (positive grad_out) into a 4 x 5 plane in the middle of a buffer of
    -0.0: returns the elements of the buffer before and after the plane that were written (any add, even of +0.0,
    makes a -0.0 +0.0)."""
    h, w = 4, 5
    buf = torch.full((PAD + h * w + PAD,), -0.0, dtype=torch.float64, device=dev)
    plane = buf[PAD : PAD + h * w]
    plane.zero_()
    boxes = torch.tensor([[0.0, x - 1, y - 1, x + 1, y + 1] for y, x in EDGE_POINTS], dtype=torch.float64, device=dev)
    grad = torch.rand(len(EDGE_POINTS), 1, 1, 1, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
    torch.ops.labkit.ex13_roi_scatter_backward((grad + 0.5).to(dev), boxes, 1.0, 1, 1, 1, False, plane.view(1, 1, h, w))
    outside = torch.cat([buf[:PAD], buf[PAD + h * w :]]).cpu()
    written = (~torch.signbit(outside) | (outside != 0)).nonzero().flatten().tolist()
    return [i - PAD if i < PAD else i - PAD + h * w for i in written]  # relative to the plane's first element


DTYPES = (torch.float64, torch.float32)


def gradient_check(dev, dtype):
    """The name of the check of the gradient against torchvision's on `dev` in `dtype`."""
    return f"gradient matches torchvision's on {dev}, {str(dtype).replace('torch.', '')}"


def grade(ops, kit_root):
    report, op = begin(ops, "ex13_roi_scatter", EDIT)
    if op is None:
        return report
    try:
        import torchvision
    except ImportError:
        for dev in devices():
            report.skip(
                f"gradient matches torchvision's on {dev}",
                "torchvision is not installed here (pip install "
                "torchvision: requirements.txt), and it is the reference",
            )
        return report
    for dev in devices():
        written = outside_writes(dev)
        name = f"writes nothing outside grad_input on {dev}"
        if written:
            report.add(
                name,
                False,
                f"samples at the edges of a 4 x 5 plane and off it: the element {written[0]} (counted from the "
                f"plane's first; the plane is 0 .. 19) was written",
                "a point off the map (inside false) has the pixels -1: add nothing for it. Elsewhere use the "
                "neighbours' own pixels (y_high, x_high), not y_low + 1 or x_low + 1: at the last row and column "
                "there is no pixel after (an add of 0 there is still a write, past the tensor)",
            )
            why = "not run: the kernel writes outside grad_input (above); on a real gradient those writes would "
            why += "land in memory that is not the gradient's"
            for dtype in DTYPES:
                report.skip(gradient_check(dev, dtype), why)
            report.skip(f"many boxes over one region on {dev}", why)
            continue
        report.add(name, True, f"{len(EDGE_POINTS)} samples at the edges and off the map, -0.0 around the plane")

        for dtype in DTYPES:
            failure = None
            for i, case in enumerate(CASES):
                g = torch.Generator().manual_seed(i)
                x = torch.randn(SHAPE, generator=g, dtype=torch.float64).to(dev, dtype)
                boxes = random_boxes(30, SHAPE[0], SHAPE[2], SHAPE[3], case[1], seed=i).to(dev, dtype)
                size = case[0]
                grad_out = torch.randn(30, SHAPE[1], *size, generator=g, dtype=torch.float64).to(dev, dtype)
                diff = first_difference(*gradients(op, torchvision, x, boxes, grad_out, case), dtype)
                if diff:
                    failure = (case, diff)
                    break
            name = gradient_check(dev, dtype)
            if failure:
                (size, scale, ratio, aligned), ((n, c, y, x), e, got) = failure
                report.add(
                    name,
                    False,
                    f"output_size={size}, spatial_scale={scale}, sampling_ratio={ratio}, aligned={aligned}, 30 boxes: "
                    f"the gradient of image {n}, channel {c}, pixel (row, col) = ({y}, {x}) should be {e:.6g}, got "
                    f"{got:.6g}",
                    diagnosis(op, dev),
                )
            else:
                report.add(name, True, f"{len(CASES)} cases of 30 random boxes, aligned and not")

        # many boxes over one small region: on a GPU, threads add into the same pixels at once
        g = torch.Generator().manual_seed(400)
        corner = torch.rand(400, 2, generator=g, dtype=torch.float64) * 0.5 + 2
        boxes = torch.cat([torch.zeros(400, 1, dtype=torch.float64), corner, corner + 3], dim=1).to(dev)
        x = torch.randn(1, 2, 8, 8, generator=g, dtype=torch.float64).to(dev)
        grad_out = torch.ones(400, 2, 7, 7, dtype=torch.float64, device=dev)
        case = ((7, 7), 1.0, 2, False)
        diff = first_difference(*gradients(op, torchvision, x, boxes, grad_out, case), torch.float64)
        name = f"many boxes over one region on {dev}"
        if diff:
            (n, c, y, xx), e, got = diff
            matches = not any(r.status == "fail" and r.check.startswith("gradient matches") for r in report.results)
            report.add(
                name,
                False,
                f"400 boxes over a few pixels, float64: pixel (row, col) = ({y}, {xx}) of channel {c} should get "
                f"{e:.6g}, got {got:.6g}",
                (
                    "adds were lost: many threads add into one pixel at once here, and a plain += (a read, an add "
                    "and a write) loses every add another thread made in between: use atomic_add"
                )
                if matches and dev == "cuda"
                else "fix the gradient on random boxes first (above)",
            )
        else:
            report.add(name, True, "400 boxes of 7 x 7 bins, 2 x 2 samples each, over a few pixels")
    return report
