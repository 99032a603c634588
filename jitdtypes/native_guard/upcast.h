// The upcast path in C++, for the common routed call of a typed guard: a functional operator (no views, no
// in-place, no out=, Tensor results) whose every tensor argument has the same 16-bit complex dtype PyTorch
// lacks. The Python router would widen those tensors to complex64, call the kernel underneath and round the
// results back; crossing into Python for that costs several microseconds, so the typed guard does the same
// three steps itself. The same ATen functions (to(), the original kernel) make the results bit-identical.
//
// The first such call of each dtype still goes to the router, which builds and logs its specialization;
// later ones are counted in a cell Python owns (path_record), read without a lock like the Python cells.
// Calls that are not the common case (conj/neg flags, mixed dtypes, Python numbers, dtype=) go to the router.

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
// side), no wrapped numbers (Python turns them into tensors of its choosing), no dtype=.
struct UpcastCheck {
  ScalarType dtype = ScalarType::Undefined;
  bool ok = true;

  void see(const Tensor& t) {
    if (!t.defined()) return;
    const ScalarType own = t.scalar_type();
    if ((dtype != ScalarType::Undefined && own != dtype) || t.is_conj() || t.is_neg() ||
        t.unsafeGetTensorImpl()->is_wrapped_number()) {
      ok = false;
    }
    dtype = own;
  }
  void see(const std::optional<Tensor>& t) {
    if (t.has_value()) see(*t);
  }
  void see(const std::optional<ScalarType>& requested) {
    if (requested.has_value()) ok = false;
  }
  template <class Other>
  void see(const Other&) {}
};

// The complex64 copies of one call's tensors: a tensor passed twice (m @ m) is widened once.
class Widened {
 public:
  Tensor operator()(const Tensor& t) {
    if (!t.defined()) return t;
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    for (size_t i = 0; i < count_; ++i)
      if (sources_[i] == impl) return wide_[i];
    Tensor wide = t.to(ScalarType::ComplexFloat);
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

// A signature the C++ upcast can serve: tensors read-only and one by one, Tensor results by value.
template <class A>
constexpr bool passes_through = !std::is_same_v<A, Tensor&> && !std::is_same_v<std::decay_t<A>, at::TensorList> &&
                                !std::is_same_v<std::decay_t<A>, at::ITensorListRef> &&
                                !std::is_same_v<std::decay_t<A>, c10::List<std::optional<Tensor>>>;

template <class Return>
constexpr bool tensor_results = std::is_same_v<Return, Tensor>;
template <class... Results>
constexpr bool tensor_results<std::tuple<Results...>> = (std::is_same_v<Results, Tensor> && ...);

// An argument as the complex64 kernel receives it: a widened copy of a tensor, anything else as it is.
template <class A>
using Passed = std::conditional_t<is_tensor_arg<A>, std::decay_t<A>, A>;

template <class A>
Passed<A> widen_arg(std::remove_reference_t<A>& value, Widened& widened) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    return widened(value);
  } else if constexpr (std::is_same_v<std::decay_t<A>, std::optional<Tensor>>) {
    return value.has_value() ? std::optional<Tensor>(widened(*value)) : std::optional<Tensor>();
  } else {
    return value;
  }
}

// complex64 back to the inputs' dtype, float32 to the real type of its family, anything else unchanged.
inline Tensor round_back(const Tensor& result, ScalarType dtype) {
  if (!result.defined()) return result;
  if (result.scalar_type() == ScalarType::ComplexFloat) return result.to(dtype);
  if (result.scalar_type() == ScalarType::Float) {
    return result.to(dtype == ScalarType::ComplexHalf ? ScalarType::Half : ScalarType::BFloat16);
  }
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
