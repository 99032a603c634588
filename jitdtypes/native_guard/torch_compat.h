// What differs between the torch versions jitdtypes supports (2.9 to 2.14), C++ side: the one place that says
// which torch needs which path. Python's differences live in jitdtypes/torch_compat.py.
//
//   torch          what the guard needs                     how it gets it here
//   2.14           the unboxed KernelFunction of a kernel   SafeKernelFunction::kernelFunction()
//   2.9 - 2.13     the same                                 the private member SafeKernelFunction::kernel_
//   2.9 - 2.12     whether a tensor has names (copy_        Tensor::has_names()
//                  propagates names, so convert.h leaves
//                  named tensors to it)
//   2.13 (CPU      the same                                 none has (named tensors are gone); detected by
//   wheel), 2.14                                            whether TensorBase has has_names()
//   2.14           whether a dtype is bcomplex32            ScalarType::BComplex32
//   2.9 - 2.13     the same                                 none is (no such dtype)
//
// A guard calls the kernels on either side of it unboxed (callBoxed would box every argument of every call),
// so it needs the KernelFunction that a SafeKernelFunction wraps. Before 2.14 no accessor exposes
// it. An explicit template instantiation may name a private member ([temp.spec.general]/6 waives access
// checking there): `Expose` takes the member pointer that way, once, for the versions without the accessor.
// The copy a SafeKernelFunction holds is taken when the kernel is captured and lives as long as the guard, as
// with the accessor.

#pragma once

#include <ATen/core/TensorBase.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <torch/version.h>

namespace jitdtypes_compat {

#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 14

struct SafeKernelMember {
  using type = c10::KernelFunction c10::SafeKernelFunction::*;
  friend type member_of(SafeKernelMember);
};

template <class Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member_of(Tag) { return Member; }
};

template struct Expose<SafeKernelMember, &c10::SafeKernelFunction::kernel_>;

inline const c10::KernelFunction& unboxed(const c10::SafeKernelFunction& kernel) {
  return kernel.*member_of(SafeKernelMember{});
}

inline bool is_bcomplex32(c10::ScalarType) { return false; }

#else

inline const c10::KernelFunction& unboxed(const c10::SafeKernelFunction& kernel) { return kernel.kernelFunction(); }

inline bool is_bcomplex32(c10::ScalarType dtype) { return dtype == c10::ScalarType::BComplex32; }

#endif

// Overload resolution prefers the int parameter, where the call compiles.
template <class Tensor>
auto has_names_of(const Tensor& t, int) -> decltype(t.has_names()) {
  return t.has_names();
}

template <class Tensor>
bool has_names_of(const Tensor&, long) {
  return false;
}

inline bool has_names(const at::TensorBase& t) { return has_names_of(t, 0); }

}  // namespace jitdtypes_compat
