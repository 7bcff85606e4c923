"""nms: non-maximum suppression, as torchvision.ops.nms computes it: the indices of the boxes kept, highest score
first. The op's Python face: its schema, how PyTorch's compiler sees it (an output whose length depends on the
data), and the friendly calls `ops.nms` and `ops.nms.batched`. The kernels are in nms.cu (GPU: the bitmask method)
and nms_cpu.cpp (CPU); nms.cpp binds them.

The loader runs `register` once per process (a schema can be defined only once), and re-reads `nms` whenever this
file changes.
"""

import torch

labkit = torch.ops.labkit  # this kit's operators: the loader defines them from SCHEMAS as it loads this file

SCHEMAS = ["nms(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor"]

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def register(lib):
    """Teach PyTorch's compiler the op's output: int64 indices, as many as the data decides."""
    torch.library.register_fake("labkit::nms", lib=lib)(_nms_fake)


def _nms_fake(boxes, scores, iou_threshold):
    """The binding's checks (nms.cpp) that the shapes alone decide, with its messages. The output's length is known
    only once the kernel ran: a new symbol (an "unbacked" size), which torch.compile carries through the graph
    instead of a number. So a compiled graph around nms needs no break and no recompile per count."""
    torch._check(
        boxes.dtype in FLOAT_DTYPES,
        lambda: (
            f"nms: boxes must be a floating-point tensor (float32, float64, float16 or bfloat16), but got {boxes.dtype}"
        ),
    )
    torch._check(
        boxes.dtype == scores.dtype,
        lambda: (
            f"nms: boxes and scores must have the same dtype, but boxes is {boxes.dtype} and scores is {scores.dtype}"
        ),
    )
    torch._check(
        boxes.dim() == 2 and boxes.shape[1] == 4,
        lambda: f"nms: boxes must have shape (N, 4), each row (x1, y1, x2, y2), but has shape {list(boxes.shape)}",
    )
    torch._check(scores.dim() == 1, lambda: f"nms: scores must be 1-D (N), but has shape {list(scores.shape)}")
    torch._check(
        boxes.shape[0] == scores.shape[0],
        lambda: (
            f"nms: boxes and scores must have the same length N, but boxes has {boxes.shape[0]} rows and scores "
            f"{scores.shape[0]} elements"
        ),
    )
    kept = torch.library.get_ctx().new_dynamic_size()  # (a max= must be a plain int: N may be a symbol itself)
    return boxes.new_empty((kept,), dtype=torch.int64)


def nms(boxes, scores, iou_threshold, idxs=None):
    """Non-maximum suppression from our kernels, with torchvision.ops.nms's arguments and result: boxes (N, 4) as
    (x1, y1, x2, y2), scores (N) of the same dtype; returns the int64 indices of the boxes kept, by decreasing score
    (equal scores: in input order). A box is dropped when a kept box of higher score overlaps it with
    IoU > iou_threshold (>= 0). With idxs (N ints, a class per box): torchvision.ops.batched_nms, suppression within
    each class only (batched_nms below)."""
    if idxs is not None:
        return batched_nms(boxes, scores, idxs, iou_threshold)
    return labkit.nms.default(boxes, scores, float(iou_threshold))


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each class, as torchvision.ops.batched_nms: the kept indices over all classes, by decreasing score.
    One call of nms, by the coordinate trick: each class's boxes are moved by class * (largest coordinate + 1), so
    boxes of different classes never overlap. (torchvision switches to a loop over the classes past 4,000 numbers
    of boxes on the CPU, 20,000 on the GPU, where the offsets could cost float32 precision; the kept set is the
    same, and equal scores of different classes may come out in another order there.)"""
    torch._check(
        idxs.dim() == 1 and idxs.shape[0] == boxes.shape[0],
        lambda: f"nms: idxs must be 1-D with one class per box ({boxes.shape[0]}), but has shape {list(idxs.shape)}",
    )
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    return labkit.nms.default(boxes + offsets[:, None], scores, float(iou_threshold))
