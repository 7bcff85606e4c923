// Binding of exercise 13 (float32, float64): checks, device guard, current stream, and the gradient (autograd
// calls your scatter through labkit::ex13_roi_scatter_backward). Nothing to edit here.
#include "binding.h"
#include <ATen/ops/zeros.h>

#include "autograd.h"
#include "ex13_roi_scatter_given.h"

// `data` is input (forward) or grad_out (backward); `image` the tensor of the input's shape (N, C, H, W).
static Ex13Shape check_args(const char* op, const char* name, const at::Tensor& data, const at::Tensor& boxes,
                            const at::Tensor& image, double spatial_scale, int64_t pooled_height,
                            int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    TORCH_CHECK_TYPE(data.scalar_type() == at::kFloat || data.scalar_type() == at::kDouble, op, ": ", name,
                     " must be float32 or float64, but got ", data.scalar_type());
    check_same_device(op, name, data, "boxes", boxes);
    check_same_dtype(op, name, data, "boxes", boxes);
    TORCH_CHECK_VALUE(image.dim() == 4, op, ": the input must be 4-D (N, C, H, W), but has shape ", image.sizes());
    TORCH_CHECK_VALUE(boxes.dim() == 2 && boxes.size(1) == 5, op,
                      ": boxes must have shape (K, 5), each row (batch index, x1, y1, x2, y2), but has shape ",
                      boxes.sizes());
    TORCH_CHECK_VALUE(pooled_height > 0 && pooled_width > 0, op, ": output_size must be positive, but is (",
                      pooled_height, ", ", pooled_width, ")");
    TORCH_CHECK_VALUE(sampling_ratio >= -1, op, ": sampling_ratio must be -1, 0 or positive, but is ",
                      sampling_ratio);
    return Ex13Shape{boxes.size(0),  image.size(0), image.size(1), image.size(2), image.size(3),
                     pooled_height, pooled_width,  sampling_ratio, spatial_scale, aligned};
}

// out: the forward's output, or grad_input (backward); in: input, or grad_out.
static void launch(bool backward, const at::Tensor& out, const at::Tensor& in, const at::Tensor& boxes,
                   const Ex13Shape& s) {
    const bool f64 = in.scalar_type() == at::kDouble;
#ifdef LABKIT_WITH_CUDA
    if (in.is_cuda()) {
        const c10::cuda::CUDAGuard guard(in.device());
        check_launch(backward ? "ex13_backward_kernel" : "ex13_forward_kernel",
                     ex13_roi_scatter_cuda(backward, f64, out.data_ptr(), in.data_ptr(), boxes.data_ptr(), s,
                                           current_stream()));
        return;
    }
#endif
    ex13_roi_scatter_cpu(backward, f64, out.data_ptr(), in.data_ptr(), boxes.data_ptr(), s);
}

static at::Tensor forward_impl(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale, int64_t ph,
                               int64_t pw, int64_t sampling_ratio, bool aligned) {
    const Ex13Shape s =
        check_args("ex13_roi_scatter", "input", input, boxes, input, spatial_scale, ph, pw, sampling_ratio, aligned);
    at::Tensor out = at::empty({s.boxes, s.channels, ph, pw}, input.options());
    if (out.numel() > 0) launch(false, out, input.contiguous(), boxes.contiguous(), s);
    return out;
}

// grad_input += the gradient of grad_out (the caller zeroes it first).
static void backward_impl(const at::Tensor& grad_out, const at::Tensor& boxes, double spatial_scale, int64_t ph,
                          int64_t pw, int64_t sampling_ratio, bool aligned, at::Tensor& grad_input) {
    const char* op = "ex13_roi_scatter_backward";
    const Ex13Shape s =
        check_args(op, "grad_out", grad_out, boxes, grad_input, spatial_scale, ph, pw, sampling_ratio, aligned);
    check_same_device(op, "grad_input", grad_input, "grad_out", grad_out);
    check_same_dtype(op, "grad_input", grad_input, "grad_out", grad_out);
    TORCH_CHECK_VALUE(grad_input.is_contiguous(), op, ": grad_input must be contiguous (it is written through a raw "
                      "pointer)");
    TORCH_CHECK_VALUE(grad_out.dim() == 4 && grad_out.size(0) == s.boxes && grad_out.size(1) == s.channels &&
                          grad_out.size(2) == ph && grad_out.size(3) == pw,
                      op, ": grad_out must have shape (K, C, PH, PW) = (", s.boxes, ", ", s.channels, ", ", ph, ", ",
                      pw, "), but has shape ", grad_out.sizes());
    if (grad_out.numel() > 0 && grad_input.numel() > 0)
        launch(true, grad_input, grad_out.contiguous(), boxes.contiguous(), s);
}

// The gradient, in C++ as for every op of the kit (the pattern: kernels/common/autograd.h): a zeroed grad_input,
// into which your scatter adds.
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Ex13Function : torch::autograd::Function<Ex13Function> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& boxes,
                              double spatial_scale, int64_t ph, int64_t pw, int64_t sampling_ratio, bool aligned) {
        ctx->save_for_backward({boxes});
        ctx->saved_data["spatial_scale"] = spatial_scale;
        ctx->saved_data["ph"] = ph;
        ctx->saved_data["pw"] = pw;
        ctx->saved_data["sampling_ratio"] = sampling_ratio;
        ctx->saved_data["aligned"] = aligned;
        ctx->saved_data["sizes"] = input.sizes().vec();
        static const auto op =
            typed_op<at::Tensor(const at::Tensor&, const at::Tensor&, double, int64_t, int64_t, int64_t, bool)>(
                "labkit::ex13_roi_scatter");
        const at::AutoDispatchBelowADInplaceOrView below_autograd;
        return op.call(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        static const auto op = typed_op<void(const at::Tensor&, const at::Tensor&, double, int64_t, int64_t, int64_t,
                                             bool, at::Tensor&)>("labkit::ex13_roi_scatter_backward");
        auto& d = ctx->saved_data;
        const at::Tensor boxes = ctx->get_saved_variables()[0];
        at::Tensor grad_input = at::zeros(d["sizes"].toIntVector(), grads[0].options());
        op.call(grads[0], boxes, d["spatial_scale"].toDouble(), d["ph"].toInt(), d["pw"].toInt(),
                d["sampling_ratio"].toInt(), d["aligned"].toBool(), grad_input);
        return {grad_input, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

static at::Tensor autograd_impl(const at::Tensor& input, const at::Tensor& boxes, double spatial_scale, int64_t ph,
                                int64_t pw, int64_t sampling_ratio, bool aligned) {
    if (wants_grad(input))
        return Ex13Function::apply(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return forward_impl(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned);
}

TORCH_LIBRARY_IMPL(labkit, Autograd, m) { m.impl("ex13_roi_scatter", &autograd_impl); }

TORCH_LIBRARY_IMPL(labkit, CPU, m) {
    m.impl("ex13_roi_scatter", &forward_impl);
    m.impl("ex13_roi_scatter_backward", &backward_impl);
}
#ifdef LABKIT_WITH_CUDA
TORCH_LIBRARY_IMPL(labkit, CUDA, m) {
    m.impl("ex13_roi_scatter", &forward_impl);
    m.impl("ex13_roi_scatter_backward", &backward_impl);
}
#endif
