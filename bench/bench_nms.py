"""nms's part of `make bench` (bench/run.py imports this file and calls `run(bench)`). On a GPU only.

A detector's NMS: 1,000 and 10,000 boxes of 10 to 100 pixels a side in a 1000 x 1000 image (crowded: many overlap),
random scores, iou_threshold 0.5, float32. Ours (torch.ops.labkit.nms: the bitmask kernel, then the sequential walk
in one GPU block, then the kept count copied back) against torchvision.ops.nms (the same bitmask kernel, then the
mask copied to the host and walked there). Each call ends with a copy to the host and a wait, on both sides: the
time is what a caller waits for.

n is the number of boxes. Bytes: the boxes and scores read, the kept indices written (at most n): a yardstick for
ours/torch only; NMS is bound by its sequential walk, not by memory.
"""

import torch

from loader import ops

COUNTS = (1_000, 10_000)
THRESHOLD = 0.5

# Ours at least as fast as torchvision at both counts
BARS = [
    {
        "op": "nms",
        "pass": "forward",
        "dtype": "float32",
        "min_n": n,
        "max_n": n,
        "impl": "ours",
        "vs": "torch",
        "at_least": 1.00,
        "device": "cuda",
    }
    for n in COUNTS
]


def detector_boxes(n, device, seed=0, image=1000.0):
    """Corners on a quarter-pixel grid: the IoUs are then exact but for the division, so ours and torchvision's agree
    to the bit (tests/test_nms.py's make_boxes says why that matters for the check below)."""
    g = torch.Generator().manual_seed(seed)
    side = torch.rand(n, 2, generator=g) * 90 + 10
    xy = torch.rand(n, 2, generator=g) * (image - side)
    boxes = (torch.cat([xy, xy + side], dim=1) * 4).round() / 4
    return boxes.to(device), torch.rand(n, generator=g).to(device)


def run(bench):
    if bench.device.type != "cuda":
        print("  nms: GPU only (torchvision's CUDA kernel is the reference); nothing measured on the CPU")
        return
    import torchvision

    dev = bench.device
    ops.nms(torch.zeros(1, 4, device=dev), torch.zeros(1, device=dev), THRESHOLD)  # build and load before timing
    ours = torch.ops.labkit.nms.default
    for n in COUNTS:
        boxes, scores = detector_boxes(n, dev)
        kept = ours(boxes, scores, THRESHOLD)
        assert torch.equal(kept, torchvision.ops.nms(boxes, scores, THRESHOLD)), "nms differs from torchvision's"
        nbytes = boxes.numel() * 4 + scores.numel() * 4 + n * 8
        bench.measure("nms", "forward", torch.float32, n, "ours", lambda: ours(boxes, scores, THRESHOLD), nbytes)
        bench.measure(
            "nms", "forward", torch.float32, n, "torch", lambda: torchvision.ops.nms(boxes, scores, THRESHOLD), nbytes
        )
