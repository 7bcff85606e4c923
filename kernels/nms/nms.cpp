// nms.cpp: the binding of nms: checks the tensors, sorts the scores, calls the torch-free kernels in nms_cpu.cpp /
// nms.cu, and registers them as the kernels of labkit::nms (schema in op.py). No gradient: the output is indices.
//
// The sort is PyTorch's, called exactly as torchvision calls it (stable, descending), on the scores' device: so
// equal scores keep their input order, NaN scores come first (a descending sort puts NaN above everything), and
// ties are broken the same way as in torchvision.ops.nms, on both devices.
#include "binding.h"
#include <ATen/ops/sort.h>

#include "nms.h"

static DType check_inputs(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
    check_same_device("nms", "boxes", boxes, "scores", scores);
    const DType dtype = kit_dtype("nms", "boxes", boxes);
    check_same_dtype("nms", "boxes", boxes, "scores", scores);
    TORCH_CHECK_VALUE(boxes.dim() == 2 && boxes.size(1) == 4,
                      "nms: boxes must have shape (N, 4), each row (x1, y1, x2, y2), but has shape ", boxes.sizes());
    TORCH_CHECK_VALUE(scores.dim() == 1, "nms: scores must be 1-D (N), but has shape ", scores.sizes());
    TORCH_CHECK_VALUE(boxes.size(0) == scores.size(0),
                      "nms: boxes and scores must have the same length N, but boxes has ", boxes.size(0),
                      " rows and scores ", scores.size(0), " elements");
    TORCH_CHECK_VALUE(iou_threshold >= 0, "nms: iou_threshold must be >= 0 (an IoU is between 0 and 1), but is ",
                      iou_threshold);
    return dtype;
}

// The boxes' indices by decreasing score, ties in input order.
static at::Tensor score_order(const at::Tensor& scores) {
    return std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
}

// ----------------------------------------------------------------------------------------------
// CPU

static at::Tensor nms_cpu_impl(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
    const DType dtype = check_inputs(boxes, scores, iou_threshold);
    const int64_t n = boxes.size(0);
    at::Tensor keep = at::empty({n}, boxes.options().dtype(at::kLong));
    if (n == 0) return keep;
    const at::Tensor order = score_order(scores), bx = boxes.contiguous();
    const int64_t count =
        nms_cpu(dtype, keep.data_ptr<int64_t>(), bx.data_ptr(), order.data_ptr<int64_t>(), n, iou_threshold);
    return keep.narrow(0, 0, count);
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) { m.impl("nms", &nms_cpu_impl); }

// ----------------------------------------------------------------------------------------------
// CUDA: the guard makes the boxes' GPU current; both kernels go to its current stream. The kept count comes back
// to the host (.item(): a copy and a wait on that stream): the output's size depends on it.
#ifdef LABKIT_WITH_CUDA

static at::Tensor nms_cuda_impl(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
    const DType dtype = check_inputs(boxes, scores, iou_threshold);
    const c10::cuda::CUDAGuard guard(boxes.device());
    const int64_t n = boxes.size(0);
    const int device = boxes.get_device();
    TORCH_CHECK_VALUE(n <= nms_max_boxes_cuda(device), "nms: at most ", nms_max_boxes_cuda(device),
                      " boxes on this GPU (the walk keeps a bit per box in one block's shared memory), but there are ",
                      n);
    const at::TensorOptions longs = boxes.options().dtype(at::kLong);
    at::Tensor keep = at::empty({n}, longs);
    if (n == 0) return keep;
    const at::Tensor order = score_order(scores), bx = boxes.contiguous();
    at::Tensor mask = at::empty({n * nms_mask_words(n)}, longs);
    at::Tensor count = at::empty({}, longs);
    check_launch("nms_mask_kernel / nms_reduce_kernel",
                 nms_cuda(dtype, keep.data_ptr<int64_t>(), count.data_ptr<int64_t>(),
                          reinterpret_cast<uint64_t*>(mask.data_ptr<int64_t>()), bx.data_ptr(),
                          order.data_ptr<int64_t>(), n, iou_threshold, device, current_stream()));
    return keep.narrow(0, 0, count.item<int64_t>());
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) { m.impl("nms", &nms_cuda_impl); }

#endif  // LABKIT_WITH_CUDA
