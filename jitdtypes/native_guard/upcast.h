// The upcast path in C++, for the common routed call of a typed guard: an operator without views, with
// Tensor results or one written tensor it returns (in place, out=), whose every tensor argument has the same
// 16-bit complex dtype PyTorch lacks (an out= tensor may have its real partner), next to Python numbers. The
// Python router would widen those tensors to complex64, call the kernel underneath and round the results
// back (or write them back); crossing into Python for that costs several microseconds, so the typed guard does the same
// three steps itself. The same functions (the original kernel, and to()'s conversion: convert.h's, which the
// copy_ guard gives the Python path too) make the results bit-identical.
//
// The first such call of each dtype still goes to the router, which builds and logs its specialization;
// later ones are counted in a cell Python owns (path_record), read without a lock like the Python cells.
// Calls that are not the common case (conj/neg flags, mixed dtypes, dtype=) go to the router.
//
// A Python number in a Tensor position (a wrapped number) is passed on still wrapped: the Python path passes a
// zero-dim tensor of complex64 or of the number's own dtype instead (wrapped_numbers.operand_for), which the
// CPU kernels cast to complex64 just as they cast the wrapped number, and which promotes alike next to a
// tensor with dimensions. Next to zero-dim tensors only, promotion could differ: those calls go to the router.

#pragma once

// Included by guard.cpp inside its anonymous namespace, after DtypeSet; the standard headers come with it.

// Python turns it off for the triton-interpret CPU backend, while probing bypasses overrides, and on request.
std::atomic<bool> upcast_enabled{false};

// What one registration upcasts in C++ (absent when its schema or dispatch key rules it out).
struct UpcastState {
  DtypeSet dtypes;                                     // dtypes upcast in C++: those PyTorch lacks here
  std::array<uint64_t*, kScalarTypes> calls{};         // per dtype: Python's counter cell
  mutable std::array<std::atomic<bool>, kScalarTypes> routed{};  // per dtype: the first call went to Python

  // Whether a call of `dtype` is upcast here: one of ours, and not the first (that one builds Python's log).
  bool takes(ScalarType dtype) const {
    const size_t index = static_cast<size_t>(dtype);
    if (index >= kScalarTypes || !dtypes[index]) return false;
    if (!routed[index].load(std::memory_order_relaxed)) {
      routed[index].store(true, std::memory_order_relaxed);
      return false;
    }
    return true;
  }

  void count(ScalarType dtype) const {
    std::atomic_ref<uint64_t>(*calls[static_cast<size_t>(dtype)]).fetch_add(1, std::memory_order_relaxed);
  }
};

// Per call: one dtype across every defined tensor, no lazy conj/neg (Python resolves them on the 16-bit
// side), no dtype=; wrapped numbers other than bool only next to a tensor with dimensions. A tensor written in
// place (the first argument) has the dtype too, an out= tensor the dtype or its real partner.
struct UpcastCheck {
  ScalarType dtype = ScalarType::Undefined;
  ScalarType written = ScalarType::Undefined;  // of an out= tensor
  bool ok = true;
  bool numbers = false;     // a wrapped number was seen
  bool dimensions = false;  // a tensor (not a wrapped number) with dimensions was seen

  void see(const Tensor& t) {
    if (!t.defined()) return;
    if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
      // bool: sub refuses a bool tensor but not a wrapped bool, so the two paths differ (the grid test)
      if (t.scalar_type() == ScalarType::Bool) ok = false;
      numbers = true;
      return;
    }
    const ScalarType own = t.scalar_type();
    if ((dtype != ScalarType::Undefined && own != dtype) || t.is_conj() || t.is_neg()) ok = false;
    if (t.dim() > 0) dimensions = true;
    dtype = own;
  }
  void see(const std::optional<Tensor>& t) {
    if (t.has_value()) see(*t);
  }
  void see(const std::optional<ScalarType>& requested) {
    if (requested.has_value()) ok = false;
  }
  template <size_t Index, class A>
  void see_at(const std::remove_reference_t<A>& value) {
    if constexpr (std::is_same_v<A, Tensor&>) {
      if constexpr (Index == 0) {
        see(value);
      } else if (value.is_conj() || value.is_neg() || value.unsafeGetTensorImpl()->is_wrapped_number()) {
        ok = false;
      } else {
        written = value.scalar_type();
      }
    } else if constexpr (std::is_same_v<std::decay_t<A>, Tensor> ||
                         std::is_same_v<std::decay_t<A>, std::optional<Tensor>> ||
                         std::is_same_v<std::decay_t<A>, std::optional<ScalarType>>) {
      see(value);
    }
  }

  // The dtype to upcast, or Undefined when the call is not the common case.
  ScalarType verdict() const {
    if (!ok || dtype == ScalarType::Undefined || (numbers && !dimensions)) return ScalarType::Undefined;
    if (written != ScalarType::Undefined && written != dtype && written != real_partner(dtype)) {
      return ScalarType::Undefined;
    }
    return dtype;
  }

  static ScalarType real_partner(ScalarType dtype) {
    return dtype == ScalarType::ComplexHalf ? ScalarType::Half : ScalarType::BFloat16;
  }
};

// The complex64 copies of one call's tensors: a tensor passed twice (m @ m) is widened once.
class Widened {
 public:
  Tensor operator()(const Tensor& t) {
    if (!t.defined()) return t;
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    for (size_t i = 0; i < count_; ++i)
      if (sources_[i] == impl) return wide_[i];
    Tensor wide = conversion::to(t, ScalarType::ComplexFloat);
    if (count_ < sources_.size()) {
      sources_[count_] = impl;
      wide_[count_++] = wide;
    }
    return wide;
  }

 private:
  std::array<const c10::TensorImpl*, 4> sources_{};
  std::array<Tensor, 4> wide_;
  size_t count_ = 0;
};

template <class A>
constexpr bool is_tensor_arg = std::is_same_v<A, const Tensor&> || std::is_same_v<A, const std::optional<Tensor>&>;

// A signature the C++ upcast can serve: tensors one by one (no lists); Tensor results by value, or one written
// tensor returned by reference.
template <class A>
constexpr bool one_by_one = !std::is_same_v<std::decay_t<A>, at::TensorList> &&
                            !std::is_same_v<std::decay_t<A>, at::ITensorListRef> &&
                            !std::is_same_v<std::decay_t<A>, c10::List<std::optional<Tensor>>>;

template <class Return>
constexpr bool tensor_results = std::is_same_v<Return, Tensor>;
template <class... Results>
constexpr bool tensor_results<std::tuple<Results...>> = (std::is_same_v<Results, Tensor> && ...);

template <class Return, class... Args>
constexpr bool upcastable =
    (one_by_one<Args> && ...) &&
    ((tensor_results<Return> && !(std::is_same_v<Args, Tensor&> || ...)) ||
     (std::is_same_v<Return, Tensor&> && (static_cast<int>(std::is_same_v<Args, Tensor&>) + ...) == 1));

// The written tensor of a call: the caller's, and the complex64/float32 one the kernel writes instead.
struct Written {
  Tensor* original = nullptr;
  Tensor wide;
};

// An argument as the complex64 kernel receives it: a widened copy of a tensor, anything else as it is.
template <class A>
using Passed = std::conditional_t<is_tensor_arg<A>, std::decay_t<A>, A>;

template <class A, size_t Index>
Passed<A> widen_arg(std::remove_reference_t<A>& value, Widened& widened, Written& written) {
  if constexpr (std::is_same_v<A, Tensor&>) {
    // in place: a copy of its own, as the Python path makes (never shared with an input); out=: its values are
    // not read, a fresh buffer of its shape and strides is what the Python path passes
    written.original = &value;
    if constexpr (Index == 0) {
      written.wide = conversion::to(value, ScalarType::ComplexFloat);
    } else {
      written.wide = at::empty_like(value, value.options().dtype(value.is_complex() ? ScalarType::ComplexFloat
                                                                                    : ScalarType::Float));
    }
    return written.wide;
  } else if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    return widened(value);
  } else if constexpr (std::is_same_v<std::decay_t<A>, std::optional<Tensor>>) {
    return value.has_value() ? std::optional<Tensor>(widened(*value)) : std::optional<Tensor>();
  } else {
    return value;
  }
}

// The caller's tensor gets the kernel's values, as upcast._write_plain gives them: resized first when the
// kernel resized its buffer, with kernels_templates.common.resize_output's warning word for word (a verbatim
// c10 warning: no C++ source location appended); copy_ rounds as to() does.
inline Tensor& write_back(const Written& written) {
  Tensor& dst = *written.original;
  const c10::IntArrayRef shape = written.wide.sizes();
  if (!dst.sizes().equals(shape)) {
    if (dst.numel() != 0) {
      std::ostringstream message;
      message << "An output with one or more elements was resized since it had shape " << dst.sizes()
              << ", which does not match the required output shape " << shape
              << ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
                 "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
                 "inplace, to zero elements with t.resize_(0).";
      c10::warn(c10::Warning(c10::UserWarning(), c10::SourceLocation{__func__, __FILE__, __LINE__}, message.str(),
                             /*verbatim=*/true));
    }
    dst.resize_(shape);
  }
  dst.copy_(written.wide);
  return dst;
}

// complex64 back to the inputs' dtype, float32 to the real type of its family, anything else unchanged.
inline Tensor round_back(const Tensor& result, ScalarType dtype) {
  if (!result.defined()) return result;
  if (result.scalar_type() == ScalarType::ComplexFloat) return conversion::to(result, dtype);
  if (result.scalar_type() == ScalarType::Float) return result.to(UpcastCheck::real_partner(dtype));
  return result;
}

template <class Return>
Return round_results(Return result, ScalarType dtype) {
  if constexpr (std::is_same_v<Return, Tensor>) {
    return round_back(result, dtype);
  } else {
    return std::apply([dtype](const auto&... each) { return Return(round_back(each, dtype)...); }, result);
  }
}
