// roi_align.cpp: the binding of roi_align: checks the tensors and sizes, calls the torch-free launchers in
// roi_align_cpu.cpp / roi_align.cu, and registers them as the kernels of labkit::roi_align and
// labkit::roi_align_backward (schemas in op.py). The gradient is here too, in C++.
//
// Layouts: on the GPU the forward reads input in place when it is (N, C, H, W) contiguous or channels-last (each
// layout has a kernel of its own); any other view, and every input on the CPU, is copied to (N, C, H, W) first
// (.contiguous()). boxes is (K, 5): batch index, x1, y1, x2, y2, of input's dtype.
#include "binding.h"
#include <ATen/ops/zeros.h>

#include "autograd.h"
#include "roi_align.h"

// The checks of both passes; messages name the argument. `data` is input (forward) or grad_out (backward).
static DType check_boxes(const char* op, const char* name, const at::Tensor& data, const at::Tensor& boxes) {
    check_same_device(op, name, data, "boxes", boxes);
    const DType dtype = kit_dtype(op, name, data);
    check_same_dtype(op, name, data, "boxes", boxes);
    TORCH_CHECK_VALUE(boxes.dim() == 2 && boxes.size(1) == 5, op,
                      ": boxes must have shape (K, 5), each row (batch index, x1, y1, x2, y2), but has shape ",
                      boxes.sizes(), ". (ops.roi_align also takes a list of (Ki, 4) tensors, one per image.)");
    TORCH_CHECK_VALUE(boxes.size(0) <= std::numeric_limits<int32_t>::max(), op,
                      ": at most 2^31 - 1 boxes (one grid column each), but boxes has ", boxes.size(0));
    return dtype;
}

static void check_sizes(const char* op, int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                        int64_t channels) {
    TORCH_CHECK_VALUE(pooled_height > 0 && pooled_width > 0, op, ": output_size must be positive, but is (",
                      pooled_height, ", ", pooled_width, ")");
    TORCH_CHECK_VALUE(sampling_ratio >= 0 || sampling_ratio == -1, op,
                      ": sampling_ratio must be -1 or 0 (adaptive: ceil(box size / output size) samples per bin) "
                      "or positive (that many per bin along each axis), but is ",
                      sampling_ratio);
    TORCH_CHECK_VALUE(cdiv(channels, 32) <= 65535, op, ": at most ", 65535 * 32, " channels, but there are ", channels);
}

static RoiAlignShape shape_of(int64_t boxes, int64_t n, int64_t c, int64_t h, int64_t w, int64_t ph, int64_t pw,
                              double spatial_scale, int64_t sampling_ratio, bool aligned) {
    return RoiAlignShape{boxes, n, c, h, w, ph, pw, spatial_scale, sampling_ratio, aligned};
}

static void check_version(int64_t version) {
    TORCH_CHECK_VALUE(version == kRoiAlignBackwardAtomic || version == kRoiAlignBackwardChannelsLast,
                      "roi_align: the backward version must be 1 (atomic) or 2 (channels_last), but is ", version);
}

static RoiAlignShape check_forward(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale,
                                   int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned,
                                   int64_t backward_version) {
    TORCH_CHECK_VALUE(input.dim() == 4, "roi_align: input must be 4-D (N, C, H, W), but has shape ", input.sizes());
    check_sizes("roi_align", pooled_height, pooled_width, sampling_ratio, input.size(1));
    check_version(backward_version);
    return shape_of(boxes.size(0), input.size(0), input.size(1), input.size(2), input.size(3), pooled_height,
                    pooled_width, spatial_scale, sampling_ratio, aligned);
}

static void check_batch_index(const char* op, int64_t bad, const at::Tensor& boxes, int64_t batch) {
    TORCH_CHECK_INDEX(bad < 0, op, ": boxes[", bad, ", 0] (the batch index) is ", boxes[bad][0].item<double>(),
                      ", but input has ", batch, " image(s): it must be in [0, ", batch, ")");
}

// ----------------------------------------------------------------------------------------------
// CPU

static at::Tensor roi_align_cpu_impl(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale,
                                     int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned,
                                     int64_t backward_version) {
    const DType dtype = check_boxes("roi_align", "input", input, boxes);
    const RoiAlignShape s = check_forward(input, boxes, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                                          aligned, backward_version);
    at::Tensor out = at::empty({s.boxes, s.channels, pooled_height, pooled_width}, input.options());
    if (out.numel() == 0) return out;
    const at::Tensor in = input.contiguous(), bx = boxes.contiguous();
    check_batch_index("roi_align", roi_align_forward_cpu(dtype, out.data_ptr(), in.data_ptr(), bx.data_ptr(), s), bx,
                      s.batch);
    return out;
}

// The gradient's sums are kept in float for the 16-bit dtypes: the buffer, and the one rounding at the end.
static at::ScalarType sum_type(const at::Tensor& t) {
    return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

static RoiAlignShape check_backward(const at::Tensor& grad_out, const at::Tensor& boxes, double spatial_scale,
                                    int64_t pooled_height, int64_t pooled_width, int64_t batch, int64_t channels,
                                    int64_t height, int64_t width, int64_t sampling_ratio, bool aligned,
                                    int64_t version) {
    const char* op = "roi_align_backward";
    check_sizes(op, pooled_height, pooled_width, sampling_ratio, channels);
    TORCH_CHECK_VALUE(batch >= 0 && channels >= 0 && height >= 0 && width >= 0, op,
                      ": the input sizes must not be negative, but are (", batch, ", ", channels, ", ", height, ", ",
                      width, ")");
    TORCH_CHECK_VALUE(grad_out.dim() == 4 && grad_out.size(0) == boxes.size(0) && grad_out.size(1) == channels &&
                          grad_out.size(2) == pooled_height && grad_out.size(3) == pooled_width,
                      op, ": grad_out must have shape (K, C, PH, PW) = (", boxes.size(0), ", ", channels, ", ",
                      pooled_height, ", ", pooled_width, "), but has shape ", grad_out.sizes());
    check_version(version);
    return shape_of(boxes.size(0), batch, channels, height, width, pooled_height, pooled_width, spatial_scale,
                    sampling_ratio, aligned);
}

static at::Tensor roi_align_backward_cpu_impl(const at::Tensor& grad_out, const at::Tensor& boxes, double spatial_scale,
                                              int64_t pooled_height, int64_t pooled_width, int64_t batch,
                                              int64_t channels, int64_t height, int64_t width, int64_t sampling_ratio,
                                              bool aligned, int64_t version) {
    const DType dtype = check_boxes("roi_align_backward", "grad_out", grad_out, boxes);
    const RoiAlignShape s = check_backward(grad_out, boxes, spatial_scale, pooled_height, pooled_width, batch, channels,
                                           height, width, sampling_ratio, aligned, version);
    at::Tensor grad = at::zeros({batch, channels, height, width}, grad_out.options().dtype(sum_type(grad_out)));
    if (grad_out.numel() > 0 && grad.numel() > 0) {
        const at::Tensor g = grad_out.contiguous(), bx = boxes.contiguous();
        check_batch_index("roi_align_backward",
                          roi_align_backward_cpu(dtype, grad.data_ptr(), g.data_ptr(), bx.data_ptr(), s), bx, batch);
    }
    // One CPU backward serves both versions (they differ in GPU memory traffic); version 2's gradient has
    // channels-last strides on every device, as op.py's fake tensor says.
    if (version == kRoiAlignBackwardChannelsLast) {
        at::Tensor nhwc = at::empty({batch, height, width, channels}, grad.options()).permute({0, 3, 1, 2});
        grad = nhwc.copy_(grad);
    }
    return grad.to(grad_out.scalar_type());  // 16-bit: rounded once, strides kept; float32, float64: no copy
}

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("roi_align", &roi_align_cpu_impl);
    m.impl("roi_align_backward", &roi_align_backward_cpu_impl);
}

// ----------------------------------------------------------------------------------------------
// Autograd, for every device. The forward is linear in input: out = A input, for a matrix A that the boxes fix.
// Its gradient is A^T grad_out: roi_align_backward. That is linear in grad_out, and its own gradient is A again:
// the forward applied to the incoming gradient. So both ops are differentiable (gradgradcheck passes), each
// through the other. boxes get no gradient (torchvision gives none either: the sample positions are not
// differentiated).

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

static at::Tensor roi_align_op(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale, int64_t ph,
                               int64_t pw, int64_t sampling_ratio, bool aligned, int64_t version) {
    static const auto op =
        typed_op<at::Tensor(const at::Tensor&, const at::Tensor&, double, int64_t, int64_t, int64_t, bool, int64_t)>(
            "labkit::roi_align");
    return op.call(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned, version);
}

static at::Tensor roi_align_backward_op(const at::Tensor& grad_out, const at::Tensor& boxes, double spatial_scale,
                                        int64_t ph, int64_t pw, int64_t n, int64_t c, int64_t h, int64_t w,
                                        int64_t sampling_ratio, bool aligned, int64_t version) {
    static const auto op =
        typed_op<at::Tensor(const at::Tensor&, const at::Tensor&, double, int64_t, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, bool, int64_t)>("labkit::roi_align_backward");
    return op.call(grad_out, boxes, spatial_scale, ph, pw, n, c, h, w, sampling_ratio, aligned, version);
}

// What both Functions keep for their backward: the boxes and every number of the call.
static void save(AutogradContext* ctx, const at::Tensor& boxes, double spatial_scale, int64_t ph, int64_t pw,
                 int64_t sampling_ratio, bool aligned, int64_t version, c10::IntArrayRef input_sizes) {
    ctx->save_for_backward({boxes});
    ctx->saved_data["spatial_scale"] = spatial_scale;
    ctx->saved_data["ph"] = ph;
    ctx->saved_data["pw"] = pw;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    ctx->saved_data["version"] = version;
    ctx->saved_data["sizes"] = input_sizes.vec();
}

struct Saved {
    at::Tensor boxes;
    double spatial_scale;
    int64_t ph, pw, sampling_ratio, version;
    bool aligned;
    std::vector<int64_t> sizes;
};

static Saved saved(AutogradContext* ctx) {
    auto& d = ctx->saved_data;
    return {
        ctx->get_saved_variables()[0], d["spatial_scale"].toDouble(), d["ph"].toInt(),       d["pw"].toInt(),
        d["sampling_ratio"].toInt(),   d["version"].toInt(),          d["aligned"].toBool(), d["sizes"].toIntVector()};
}

struct RoiAlignFunction : torch::autograd::Function<RoiAlignFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& boxes,
                              double spatial_scale, int64_t ph, int64_t pw, int64_t sampling_ratio, bool aligned,
                              int64_t version) {
        save(ctx, boxes, spatial_scale, ph, pw, sampling_ratio, aligned, version, input.sizes());
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return roi_align_op(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned, version);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const Saved s = saved(ctx);
        const at::Tensor grad_input = roi_align_backward_op(grads[0], s.boxes, s.spatial_scale, s.ph, s.pw, s.sizes[0],
                                                            s.sizes[1], s.sizes[2], s.sizes[3], s.sampling_ratio,
                                                            s.aligned, s.version);
        return {grad_input,   at::Tensor(), at::Tensor(), at::Tensor(),
                at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

struct RoiAlignBackwardFunction : torch::autograd::Function<RoiAlignBackwardFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grad_out, const at::Tensor& boxes,
                              double spatial_scale, int64_t ph, int64_t pw, int64_t n, int64_t c, int64_t h, int64_t w,
                              int64_t sampling_ratio, bool aligned, int64_t version) {
        save(ctx, boxes, spatial_scale, ph, pw, sampling_ratio, aligned, version, grad_out.sizes());
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return roi_align_backward_op(grad_out, boxes, spatial_scale, ph, pw, n, c, h, w, sampling_ratio, aligned,
                                     version);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const Saved s = saved(ctx);
        at::Tensor d_grad_out =
            roi_align_op(grads[0], s.boxes, s.spatial_scale, s.ph, s.pw, s.sampling_ratio, s.aligned, s.version);
        variable_list out(12);
        out[0] = d_grad_out;
        return out;
    }
};

static at::Tensor roi_align_autograd_impl(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale,
                                          int64_t ph, int64_t pw, int64_t sampling_ratio, bool aligned,
                                          int64_t version) {
    if (wants_grad(input))
        return RoiAlignFunction::apply(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned, version);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return roi_align_op(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned, version);
}

static at::Tensor roi_align_backward_autograd_impl(const at::Tensor& grad_out, const at::Tensor& boxes,
                                                   double spatial_scale, int64_t ph, int64_t pw, int64_t n, int64_t c,
                                                   int64_t h, int64_t w, int64_t sampling_ratio, bool aligned,
                                                   int64_t version) {
    if (wants_grad(grad_out))
        return RoiAlignBackwardFunction::apply(grad_out, boxes, spatial_scale, ph, pw, n, c, h, w, sampling_ratio,
                                               aligned, version);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return roi_align_backward_op(grad_out, boxes, spatial_scale, ph, pw, n, c, h, w, sampling_ratio, aligned, version);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) {
    m.impl("roi_align", &roi_align_autograd_impl);
    m.impl("roi_align_backward", &roi_align_backward_autograd_impl);
}

// ----------------------------------------------------------------------------------------------
// CUDA: the guard makes the inputs' GPU current; launches go to its current stream. A grid of 0 blocks is an
// invalid launch: empty outputs return before it.
#ifdef LABKIT_WITH_CUDA

static at::Tensor roi_align_cuda_impl(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale,
                                      int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned,
                                      int64_t backward_version) {
    const DType dtype = check_boxes("roi_align", "input", input, boxes);
    const RoiAlignShape s = check_forward(input, boxes, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                                          aligned, backward_version);
    const c10::cuda::CUDAGuard guard(input.device());
    at::Tensor out = at::empty({s.boxes, s.channels, pooled_height, pooled_width}, input.options());
    if (out.numel() == 0) return out;
    // Each of the two layouts is read where it lies, by the kernel written for it; any other view is copied to
    // (N, C, H, W) first.
    const bool channels_last = !input.is_contiguous() && input.is_contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor in = channels_last ? input : input.contiguous(), bx = boxes.contiguous();
    check_launch(channels_last ? "roi_align_forward_channels_last_kernel" : "roi_align_forward_kernel",
                 roi_align_forward_cuda(dtype, channels_last, out.data_ptr(), in.data_ptr(), bx.data_ptr(), s,
                                        current_stream()));
    return out;
}

static at::Tensor roi_align_backward_cuda_impl(const at::Tensor& grad_out, const at::Tensor& boxes,
                                               double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                               int64_t batch, int64_t channels, int64_t height, int64_t width,
                                               int64_t sampling_ratio, bool aligned, int64_t version) {
    const DType dtype = check_boxes("roi_align_backward", "grad_out", grad_out, boxes);
    const RoiAlignShape s = check_backward(grad_out, boxes, spatial_scale, pooled_height, pooled_width, batch, channels,
                                           height, width, sampling_ratio, aligned, version);
    const c10::cuda::CUDAGuard guard(grad_out.device());
    const bool channels_last = version == kRoiAlignBackwardChannelsLast;
    const at::TensorOptions sums = grad_out.options().dtype(sum_type(grad_out));
    // version 2 sums into (N, H, W, C); permuted, that is the (N, C, H, W) gradient with channels-last strides
    at::Tensor grad = channels_last ? at::zeros({batch, height, width, channels}, sums).permute({0, 3, 1, 2})
                                    : at::zeros({batch, channels, height, width}, sums);
    if (grad_out.numel() == 0 || grad.numel() == 0) return grad.to(grad_out.scalar_type());
    const at::Tensor g = grad_out.contiguous(), bx = boxes.contiguous();
    check_launch(
        channels_last ? "roi_align_backward_channels_last_kernel" : "roi_align_backward_atomic_kernel",
        roi_align_backward_cuda(dtype, version, grad.data_ptr(), g.data_ptr(), bx.data_ptr(), s, current_stream()));
    return grad.to(grad_out.scalar_type());  // 16-bit: rounded once, strides kept; float32, float64: no copy
}

TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("roi_align", &roi_align_cuda_impl);
    m.impl("roi_align_backward", &roi_align_backward_cuda_impl);
}

#endif  // LABKIT_WITH_CUDA
