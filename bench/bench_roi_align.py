"""roi_align's part of `make bench` (bench/run.py imports this file and calls `run(bench)`). On a GPU only: on the CPU
there is nothing to compare that says anything about the kernels.

A detector's RoIAlign: N = 2 images, a stride-4 feature map of C = 256 x 200 x 272 (an 800 x 1088 image, spatial
scale 0.25), 1000 boxes of 16 to 400 pixels a side, pooled to 7 x 7 with sampling_ratio 2; float32 and float16.
Ours against torchvision's kernels (torchvision.ops.roi_align's torch.ops.torchvision.roi_align, and its backward op
_roi_align_backward, called directly: no autograd around either side):
  forward   ours: torch.ops.labkit.roi_align                    torch: torchvision's forward
            "channels_last": ours on the same input stored channels-last (read in place by the other forward
            kernel; no bar: torchvision copies such an input to (N, C, H, W) first)
  backward  ours: torch.ops.labkit.roi_align_backward, the      torch: torchvision's backward (atomics in the
            version ops.roi_align's gradient runs (FAST);              dtype: float16 adds into float16)
            "atomic" and "channels_last": both versions

  crowded   the backward again, with the 1000 boxes crowded into one 64 x 64 pixel corner of image 0 (16 x 16
            feature-map pixels): every add lands on a few hundred pixels, where atomics collide. Ours, "atomic",
            "channels_last" and torchvision's; no bar (the lesson's measurement of contention)

n is the number of boxes. Bytes: what the pass must move at least: the feature map read (forward) or its gradient
written (backward, which zeroes it first), and the pooled output written (or its gradient read). The kernels gather
and scatter far more than that through L1/L2, so GB/s here is a yardstick for ours/torch, not a bandwidth.
"""

import torch

from loader import ops

N, C, H, W = 2, 256, 200, 272
BOXES = 1000
POOLED = (7, 7)
SCALE = 0.25
SAMPLING = 2
DTYPES = (torch.float32, torch.float16)

# Ours at least as fast as torchvision's kernels, both passes, both dtypes
BARS = [
    {
        "op": "roi_align",
        "pass": pass_,
        "dtype": dtype,
        "min_n": BOXES,
        "impl": "ours",
        "vs": "torch",
        "at_least": 1.00,
        "device": "cuda",
    }
    for pass_ in ("forward", "backward")
    for dtype in ("float32", "float16")
]


def detector_boxes(k, n, height, width, scale, device, seed=0):
    """k boxes (batch index, x1, y1, x2, y2) in image coordinates of an image (height, width) / scale: sides of 16 to
    400 pixels, log-uniform (small boxes are the common ones), anywhere in the image."""
    g = torch.Generator().manual_seed(seed)
    img_h, img_w = height / scale, width / scale
    side = torch.exp(
        torch.empty(k, 2).uniform_(torch.log(torch.tensor(16.0)), torch.log(torch.tensor(400.0)), generator=g)
    )
    x1 = torch.rand(k, generator=g) * (img_w - side[:, 0])
    y1 = torch.rand(k, generator=g) * (img_h - side[:, 1])
    index = torch.randint(0, n, (k,), generator=g).float()
    return torch.stack([index, x1, y1, x1 + side[:, 0], y1 + side[:, 1]], dim=1).to(device)


def crowded_boxes(k, device, seed=1):
    """k boxes (batch index 0, x1, y1, x2, y2) of 16 to 48 pixels a side, all inside the image's 64 x 64 pixel corner."""
    g = torch.Generator().manual_seed(seed)
    side = torch.empty(k, 2).uniform_(16.0, 48.0, generator=g)
    x1, y1 = torch.rand(k, generator=g) * (64 - side[:, 0]), torch.rand(k, generator=g) * (64 - side[:, 1])
    return torch.stack([torch.zeros(k), x1, y1, x1 + side[:, 0], y1 + side[:, 1]], dim=1).to(device)


def run(bench):
    if bench.device.type != "cuda":
        print("  roi_align: GPU only (torchvision's CUDA kernels are the reference); nothing measured on the CPU")
        return
    import torchvision  # noqa: F401  (registers torch.ops.torchvision; requirements.txt)

    from kernels.roi_align.op import FAST, VERSIONS

    dev = bench.device
    rois32 = detector_boxes(BOXES, N, H, W, SCALE, dev)
    ops.roi_align(torch.ones(1, 1, 2, 2, device=dev), rois32[:1] * 0, 1)  # build and load before timing
    fwd, bwd = torch.ops.labkit.roi_align.default, torch.ops.labkit.roi_align_backward.default
    tv_fwd, tv_bwd = torch.ops.torchvision.roi_align.default, torch.ops.torchvision._roi_align_backward.default
    ph, pw = POOLED
    for dtype in DTYPES:
        x = torch.randn(N, C, H, W, device=dev, dtype=dtype)
        rois = rois32.to(dtype)
        size = x.element_size()
        out_bytes = BOXES * C * ph * pw * size
        nbytes = x.numel() * size + out_bytes + rois.numel() * size
        args = (SCALE, ph, pw, SAMPLING, False)
        bench.measure("roi_align", "forward", dtype, BOXES, "ours", lambda: fwd(x, rois, *args), nbytes)
        bench.measure("roi_align", "forward", dtype, BOXES, "torch", lambda: tv_fwd(x, rois, *args), nbytes)
        xl = x.contiguous(memory_format=torch.channels_last)
        bench.measure("roi_align", "forward", dtype, BOXES, "channels_last", lambda: fwd(xl, rois, *args), nbytes)
        g = torch.randn(BOXES, C, ph, pw, device=dev, dtype=dtype)
        back = (SCALE, ph, pw, N, C, H, W, SAMPLING, False)
        for pass_, r in (("backward", rois), ("crowded", crowded_boxes(BOXES, dev).to(dtype))):
            for name, v in VERSIONS.items():
                # the version ops.roi_align runs (FAST) is "ours", and gets a row of its own name too, for the lesson
                for impl in ("ours", name) if name == FAST else (name,):
                    bench.measure("roi_align", pass_, dtype, BOXES, impl, lambda v=v, r=r: bwd(g, r, *back, v), nbytes)
            bench.measure("roi_align", pass_, dtype, BOXES, "torch", lambda r=r: tv_bwd(g, r, *back), nbytes)
        x = xl = g = None
        torch.cuda.empty_cache()
