// autograd.h: what a binding needs to give its op a gradient in C++: torch::autograd::Function, and a
// handle on a registered op to call it through the dispatcher.
//
// Only bindings include this (it is torch, and a heavy part of it: ~10 s more per compile than
// binding.h alone). A kernel edit never recompiles the binding, so the cost is paid on a cold build.
//
// The pattern (ELU seed, section 6.3), in every binding that has a gradient:
//
//     struct MyFunction : torch::autograd::Function<MyFunction> {
//         static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
//             ctx->save_for_backward({x});               // what backward needs
//             const at::AutoDispatchBelowADInplaceOrView below_autograd;
//             return my_op.call(x);                      // the op again, now reaching the CPU/CUDA kernel
//         }
//         static variable_list backward(AutogradContext* ctx, variable_list grads) { ... }
//     };
//     static at::Tensor my_op_autograd(const at::Tensor& x) {
//         if (wants_grad(x)) return MyFunction::apply(x);  // record the call for backward
//         const at::AutoDispatchBelowADInplaceOrView below_autograd;
//         return my_op.call(x);                            // nothing to record: straight to the kernel
//     }
//     TORCH_LIBRARY_IMPL(labkit, Autograd, m) { m.impl("my_op", &my_op_autograd); }
//
// backward() calls ops through the dispatcher too (never a kernel directly): then autograd sees them, a
// second derivative works, and torch.compile can trace the backward.
#ifndef LABKIT_AUTOGRAD_H  // an include guard, not #pragma once: see building/precompiled_header.py
#define LABKIT_AUTOGRAD_H
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>

// The registered operator `name` ("labkit::elu"), typed; keep it in a function-local static: the lookup
// is a hash-map search, the call through it is what the Python call would cost without Python.
template <typename Signature>
c10::TypedOperatorHandle<Signature> typed_op(const char* name) {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// Whether autograd must record this call: grad mode is on and some input requires a gradient. When not,
// an Autograd kernel calls the op below autograd directly: Function::apply would build a graph node that
// nobody uses (~1 us, as much as the rest of a small call).
template <typename... Tensors>
inline bool wants_grad(const Tensors&... tensors) {
    return at::GradMode::is_enabled() && (tensors.requires_grad() || ...);
}

#endif  // LABKIT_AUTOGRAD_H
