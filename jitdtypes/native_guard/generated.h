// Kernels generated for one (operator, dtype) on CPU (jitdtypes/cpu_kernels): AOTInductor models of the compile
// path's formulas (a shared library each, loaded from the cache as it is), one package serving every size. Python builds a package in the background and installs it
// here once it is ready; from then on a typed guard runs it for the calls it fits, instead of the C++ upcast.
// Anything else, and a package that raises, takes the upcast as before.
//
// Elementwise ops and full reductions run over their inputs' memory as one flat run of elements: every tensor
// of the call has that dtype, the same sizes and strides, is non-overlapping and dense (contiguous, or
// transposed and permuted: the result gets the inputs' strides, as ATen gives it), not flagged conj/neg and not a
// wrapped number; Scalars are 1 (add's and sub's alpha, addcmul's value); no dtype=; and the call has at least `min_numel`
// elements (the package's symbolic length starts at 2).
//
// Reductions over dims (sum.dim_IntList, mean.dim; var/std.correction with the default correction) of a contiguous
// tensor whose reduced dims are adjacent (ignoring dims of size 1) see it as (outer, reduced, inner) elements:
// their package holds one model per layout (GeneratedModel: all of it, rows, columns, the middle of three), each
// with symbolic sizes. A binary op's package holds the flat model and two for a smaller contiguous operand
// broadcast along the larger one's leading dims (rows) or trailing dims (columns): see Broadcast.
//
// The same kernels also take calls PyTorch serves itself, but slower (complex32 sum, abs, add, sub: ATen's
// ComplexHalf kernels are scalar code): `overridden` dtypes of a registration. Those calls run PyTorch's kernel
// until the package is installed and below its `min_numel`; the first that fits asks Python for the package
// (the first-need hook), as a routed call does for the upcast's dtypes.
//
// In-place and out= forms (exp_, add_.Tensor, mul.out, ...) write a tensor that must already have the result's
// dtype and sizes, be non-overlapping and dense, and share no memory with an input except by being it
// (x.mul_(x), torch.add(x, y, out=x)); resizing and partial overlaps stay with the upcast. Where it has its
// inputs' strides too, their own package's `into` model (GeneratedKernel::into) stores the result there;
// otherwise (a broadcast operand, other strides, abs.out's real result) their functional op's package runs
// and its result is copied into the written tensor.
//
// bcomplex32 crosses the package boundary as int32 words (AOTInductor's C shim has no bcomplex32): the package
// takes and returns int32 tensors of the same bits.

#pragma once

// Included by guard.cpp inside its anonymous namespace, after upcast.h.

// A dim reduction's models, in this order (cpu_kernels/table.py's DIM_MODELS); other packages hold one, "model".
enum GeneratedModel : size_t { kWhole, kRows, kColumns, kMiddle, kModels };

struct GeneratedKernel {
  std::array<std::unique_ptr<torch::inductor::AOTIModelContainerRunnerCpu>, kModels> models;  // by GeneratedModel
  int64_t min_numel = 0;
  bool words = false;        // inputs and complex results pass as int32 words
  bool commutative = false;  // a broadcast operand may come first (add, mul)
  // kWhole of a writing form's own package writes the flat result into its first input and returns nothing;
  // its tensors cross as int32 words or as float16/bfloat16 lanes (cpu_kernels/table.py's INTO, INTO_LANES)
  enum class Into { kNo, kWords, kLanes } into = Into::kNo;
};

// Per registration: the installed kernel per dtype (null: none). Installed kernels are never freed: a call
// may be running one while another thread installs a newer one, and a process installs a few dozen at most.
struct GeneratedSlots {
  std::string name, overload;  // "aten::sum", "" (the first-need hook's arguments)
  std::array<std::atomic<const GeneratedKernel*>, kScalarTypes> kernels{};
  mutable std::array<std::atomic<bool>, kScalarTypes> asked{};  // per overridden dtype: the hook was called
};

// Python's cpu_kernels.first_need for overridden dtypes (a ctypes callback, which takes the GIL itself).
using FirstNeedHook = void (*)(const char* name, const char* overload, const char* dtype);
inline std::atomic<FirstNeedHook> first_need_hook{nullptr};

inline std::mutex generated_lock;
inline std::unordered_map<std::string, std::shared_ptr<GeneratedSlots>>& generated_registry() {
  static std::unordered_map<std::string, std::shared_ptr<GeneratedSlots>> registry;  // "aten::exp|CPU"
  return registry;
}

inline std::shared_ptr<GeneratedSlots> generated_slots(const std::string& name, const std::string& overload,
                                                      const std::string& key) {
  std::lock_guard<std::mutex> guard(generated_lock);
  auto& slot = generated_registry()[name + "." + overload + "|" + key];
  if (!slot) {
    slot = std::make_shared<GeneratedSlots>();
    slot->name = name;
    slot->overload = overload;
  }
  return slot;
}

template <class A>
constexpr bool generated_arg = std::is_same_v<A, const Tensor&> || std::is_same_v<A, const c10::Scalar&> ||
                               std::is_same_v<A, std::optional<ScalarType>>;

// Over the inputs' memory as one flat run (elementwise ops, full reductions).
template <class Return, class... Args>
constexpr bool generatable_flat = std::is_same_v<Return, Tensor> && (generated_arg<Args> && ...);

// Reductions over dims: sum.dim_IntList, mean.dim.
template <class Return, class... Args>
constexpr bool generatable_by_dims =
    std::is_same_v<Return, Tensor> && std::is_same_v<std::tuple<std::decay_t<Args>...>,
                                                     std::tuple<Tensor, at::OptionalIntArrayRef, bool, std::optional<ScalarType>>>;

// The spread over dims: var.correction and std.correction, with the default correction only (None or 1).
template <class Return, class... Args>
constexpr bool generatable_spread =
    std::is_same_v<Return, Tensor> &&
    std::is_same_v<std::tuple<std::decay_t<Args>...>,
                   std::tuple<Tensor, at::OptionalIntArrayRef, std::optional<c10::Scalar>, bool>>;

template <class Return, class... Args>
constexpr bool generatable =
    generatable_flat<Return, Args...> || generatable_by_dims<Return, Args...> || generatable_spread<Return, Args...>;

// In place: the written tensor comes first and is an input too; out=: it comes last and is not.
template <class Return, class... Args>
constexpr bool generatable_into = std::is_same_v<Return, Tensor&> &&
                                  ((std::is_same_v<Args, Tensor&> ? 1 : 0) + ...) == 1 &&
                                  ((generated_arg<Args> || std::is_same_v<Args, Tensor&>) && ...);

// What a call holds, as far as a generated kernel cares.
struct GeneratedCheck {
  ScalarType dtype = ScalarType::Undefined;
  const Tensor* first = nullptr;
  const Tensor* second = nullptr;
  int tensors = 0;
  int64_t numel = 0;         // the largest tensor's
  bool ok = true;            // dtypes, flags and arguments a package can take
  bool same_layout = true;   // one set of sizes and strides, dense: the flat model

  void see(const Tensor& t) {
    if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number() || t.is_conj() || t.is_neg() ||
        (first != nullptr && t.scalar_type() != dtype)) {
      ok = false;
      return;
    }
    numel = std::max(numel, t.numel());
    if (++tensors == 1) {
      first = &t;
      dtype = t.scalar_type();
      if (!t.is_non_overlapping_and_dense()) same_layout = false;
      return;
    }
    if (tensors == 2) second = &t;
    if (!t.sizes().equals(first->sizes()) || !t.strides().equals(first->strides())) same_layout = false;
  }
  void see(const c10::Scalar& value) {
    if (!value.isIntegral(false) || value.toLong() != 1) ok = false;
  }
  void see(const std::optional<ScalarType>& requested) {
    if (requested.has_value()) ok = false;
  }
};

// A binary call whose smaller operand broadcasts along the other's leading dims (rows: it is one row of
// `columns` elements) or trailing dims (columns: one element per row), both contiguous. The larger one is seen
// as rows x columns elements, the smaller as 1 x columns or rows x 1; the result has the larger one's shape.
struct Broadcast {
  GeneratedModel model = kWhole;
  int64_t rows = 0, columns = 0;
};

inline std::optional<Broadcast> broadcast_of(const Tensor& full, const Tensor& part) {
  const int64_t rank = full.dim(), offset = rank - part.dim();
  if (offset < 0 || !full.is_contiguous() || !part.is_contiguous()) return std::nullopt;
  auto size = [&](int64_t d) { return d < offset ? int64_t{1} : part.size(d - offset); };  // right-aligned
  int64_t lead = 0, trail = rank;  // part's size is 1 before `lead` and from `trail` on
  while (lead < rank && size(lead) == 1) ++lead;
  while (trail > 0 && size(trail - 1) == 1) --trail;
  bool rows = true, columns = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (d >= lead && size(d) != full.size(d)) rows = false;
    if (d < trail && size(d) != full.size(d)) columns = false;
  }
  const int64_t numel = full.numel(), small = part.numel();
  if (small < 2 || small >= numel) return std::nullopt;  // one element, or no broadcast at all
  if (rows) return Broadcast{kRows, numel / small, small};
  if (columns) return Broadcast{kColumns, small, numel / small};
  return std::nullopt;
}

// The tensor as a package takes it: bcomplex32 as int32 words of the same bits (see the top).
inline Tensor as_words(const Tensor& t, bool words) { return words ? t.view(ScalarType::Int) : t; }

// A non-overlapping and dense tensor's elements in memory order.
inline Tensor as_input(const Tensor& t, bool words) {
  const Tensor flat = t.is_contiguous() ? t.view({t.numel()}) : t.as_strided({t.numel()}, {1});
  return as_words(flat, words);
}

// One model's result for these inputs, or nothing when the package lacks it or raises (the upcast serves the
// call, and raises whatever the call itself deserves).
inline std::optional<Tensor> run_model(const GeneratedKernel& kernel, GeneratedModel model, std::vector<Tensor> inputs,
                                       ScalarType dtype) {
  if (!kernel.models[model]) return std::nullopt;
  std::vector<Tensor> outputs;
  try {
    outputs = kernel.models[model]->run(inputs);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  Tensor result = std::move(outputs.at(0));
  return kernel.words && result.scalar_type() == ScalarType::Int ? result.view(dtype) : result;
}

// A tensor as an into model takes it (see GeneratedKernel::into).
inline Tensor as_into(const GeneratedKernel& kernel, const Tensor& t) {
  const Tensor flat = as_input(t, false);
  return flat.view(kernel.into == GeneratedKernel::Into::kLanes ? c10::toRealValueType(t.scalar_type())
                                                                : ScalarType::Int);
}

// The into model run over the written tensor and the inputs, all flat; false when it raises.
inline bool run_into(const GeneratedKernel& kernel, std::vector<Tensor> inputs) {
  try {
    kernel.models[kWhole]->run(inputs);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The package's result for these flat inputs, in the first input's layout; nothing when the call is too small
// or the package raises.
inline std::optional<Tensor> run_package(const GeneratedKernel& kernel, const GeneratedCheck& check,
                                         std::vector<Tensor> inputs) {
  if (check.first->numel() < kernel.min_numel) return std::nullopt;
  std::optional<Tensor> result = run_model(kernel, kWhole, std::move(inputs), check.dtype);
  // elementwise: the flat result in the inputs' layout; a full reduction's 0-dim result as it is
  if (!result || result->numel() != check.first->numel()) return result;
  return check.first->is_contiguous() ? result->view(check.first->sizes())
                                      : result->as_strided(check.first->sizes(), check.first->strides());
}

// A broadcast binary call's result (see Broadcast) from the rows or columns model; for a commutative op the
// smaller operand may come first.
inline std::optional<Tensor> run_broadcast(const GeneratedKernel& kernel, const GeneratedCheck& check) {
  const Tensor *full = check.first, *part = check.second;
  std::optional<Broadcast> layout = broadcast_of(*full, *part);
  if (!layout && kernel.commutative) {
    std::swap(full, part);
    layout = broadcast_of(*full, *part);
  }
  if (!layout || full->numel() < kernel.min_numel) return std::nullopt;
  const Tensor whole = full->view({layout->rows, layout->columns});
  const Tensor each = layout->model == kRows ? part->view({1, layout->columns}) : part->view({layout->rows, 1});
  std::optional<Tensor> result =
      run_model(kernel, layout->model, {as_words(whole, kernel.words), as_words(each, kernel.words)}, check.dtype);
  if (result) *result = result->view(full->sizes());
  return result;
}

template <class... Args>
std::optional<Tensor> run_kernel(const GeneratedKernel& kernel, const GeneratedCheck& check, const Args&... args) {
  if (!check.same_layout) {
    return check.tensors == 2 ? run_broadcast(kernel, check) : std::nullopt;
  }
  std::vector<Tensor> inputs;
  inputs.reserve(sizeof...(Args));
  auto add = [&](const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Tensor>) inputs.push_back(as_input(value, kernel.words));
  };
  (add(args), ...);
  return run_package(kernel, check, std::move(inputs));
}

// The kernel installed for `dtype`, or null.
inline const GeneratedKernel* installed(const GeneratedSlots& slots, ScalarType dtype) {
  const size_t index = static_cast<size_t>(dtype);
  return index < kScalarTypes ? slots.kernels[index].load(std::memory_order_acquire) : nullptr;
}

// A reduction over dims of a contiguous tensor, by the model of its reduced dims' layout.
inline std::optional<Tensor> run_by_dims(const GeneratedSlots& slots, const Tensor& self, at::OptionalIntArrayRef dim,
                                         bool keepdim, const std::optional<ScalarType>& dtype) {
  if (dtype.has_value() || !self.defined() || self.dim() == 0 || self.unsafeGetTensorImpl()->is_wrapped_number() ||
      self.is_conj() || self.is_neg() || !self.is_contiguous()) {
    return std::nullopt;
  }
  const GeneratedKernel* kernel = installed(slots, self.scalar_type());
  if (kernel == nullptr || self.numel() < kernel->min_numel) return std::nullopt;
  const int64_t rank = self.dim();
  std::vector<bool> reduced(rank, !dim.has_value() || dim->empty());  // none or []: every dim
  if (dim.has_value()) {
    for (const int64_t d : *dim) {
      if (d < -rank || d >= rank || reduced[d < 0 ? d + rank : d]) return std::nullopt;  // ATen's error, from the upcast
      reduced[d < 0 ? d + rank : d] = true;
    }
  }
  int64_t outer = 1, length = 1, inner = 1;  // elements before, in and after the reduced dims
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = self.size(d);
    if (size == 1) continue;
    if (reduced[d]) {
      if (inner != 1) return std::nullopt;  // reduced dims apart
      length *= size;
    } else {
      (length == 1 ? outer : inner) *= size;
    }
  }
  if (length == 1) return std::nullopt;
  const GeneratedModel model = outer == 1 ? (inner == 1 ? kWhole : kColumns) : (inner == 1 ? kRows : kMiddle);
  std::vector<int64_t> shape;
  if (outer != 1) shape.push_back(outer);
  shape.push_back(length);
  if (inner != 1) shape.push_back(inner);
  std::optional<Tensor> result = run_model(*kernel, model, {as_words(self.view(shape), kernel->words)},
                                           self.scalar_type());
  if (!result) return result;
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      sizes.push_back(self.size(d));
    } else if (keepdim) {
      sizes.push_back(1);
    }
  }
  return result->view(sizes);
}

inline std::optional<Tensor> run_spread(const GeneratedSlots& slots, const Tensor& self, at::OptionalIntArrayRef dim,
                                        const std::optional<c10::Scalar>& correction, bool keepdim) {
  if (correction.has_value() && (correction->isComplex() || correction->toDouble() != 1.0)) return std::nullopt;
  return run_by_dims(slots, self, dim, keepdim, std::nullopt);
}

// The call's result from the installed kernel, or nothing when none is installed or the call does not fit.
template <class... Args>
std::optional<Tensor> run_generated(const GeneratedSlots& slots, const Args&... args) {
  if constexpr (generatable_by_dims<Tensor, Args...>) {
    return run_by_dims(slots, args...);
  } else if constexpr (generatable_spread<Tensor, Args...>) {
    return run_spread(slots, args...);
  } else {
    GeneratedCheck check;
    (check.see(args), ...);
    if (!check.ok || check.first == nullptr) return std::nullopt;
    const GeneratedKernel* kernel = installed(slots, check.dtype);
    if (kernel == nullptr) return std::nullopt;
    return run_kernel(*kernel, check, args...);
  }
}

// The first call of an overridden dtype that fits asks Python for its package, once.
inline void ask_once(const GeneratedSlots& slots, ScalarType dtype) {
  if (!slots.asked[static_cast<size_t>(dtype)].exchange(true, std::memory_order_relaxed)) {
    if (FirstNeedHook hook = first_need_hook.load(std::memory_order_acquire)) {
      hook(slots.name.c_str(), slots.overload.c_str(), c10::toString(dtype));
    }
  }
}

// The same for an overridden dtype (PyTorch's kernel serves the call otherwise): the first call that fits,
// with at least `min_numel` elements and no kernel installed yet asks for one (over dims: any such call).
template <class... Args>
std::optional<Tensor> run_overriding(const GeneratedSlots& slots, const DtypeSet& overridden, int64_t min_numel,
                                     const Args&... args) {
  if constexpr (generatable_by_dims<Tensor, Args...> || generatable_spread<Tensor, Args...>) {  // self first
    const Tensor& self = std::get<0>(std::forward_as_tuple(args...));
    const size_t index = self.defined() ? static_cast<size_t>(self.scalar_type()) : kScalarTypes;
    if (index >= kScalarTypes || !overridden[index] || self.numel() < min_numel) return std::nullopt;
    if (installed(slots, self.scalar_type()) == nullptr) {
      ask_once(slots, self.scalar_type());
      return std::nullopt;
    }
    return run_generated(slots, args...);
  } else {
    GeneratedCheck check;
    (check.see(args), ...);
    if (!check.ok || check.first == nullptr) return std::nullopt;
    const size_t index = static_cast<size_t>(check.dtype);
    if (index >= kScalarTypes || !overridden[index] || check.numel < min_numel) return std::nullopt;
    const GeneratedKernel* kernel = installed(slots, check.dtype);
    if (kernel == nullptr) {
      ask_once(slots, check.dtype);
      return std::nullopt;
    }
    return run_kernel(*kernel, check, args...);
  }
}

// An in-place or out= call's written tensor, filled from the installed kernel of its functional op; nothing
// when none is installed or the call does not fit. Args: the guard's own (the written tensor as Tensor&).
template <class... Args>
Tensor* run_generated_into(const GeneratedSlots& slots, Args... args) {
  constexpr bool in_place = std::is_same_v<std::tuple_element_t<0, std::tuple<Args...>>, Tensor&>;
  GeneratedCheck check;
  Tensor* written = nullptr;
  std::vector<const Tensor*> read;
  auto see = [&](auto&& value) {
    if constexpr (std::is_same_v<decltype(value), Tensor&>) {
      written = &value;
      if (in_place) {
        check.see(static_cast<const Tensor&>(value));
        read.push_back(&value);
      }
    } else {
      check.see(value);
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Tensor>) read.push_back(&value);
    }
  };
  (see(args), ...);
  if (!check.ok || check.first == nullptr || written == nullptr) return nullptr;
  const GeneratedKernel* kernel = installed(slots, check.dtype);
  if (kernel == nullptr || !written->is_non_overlapping_and_dense() || written->is_conj() || written->is_neg() ||
      (check.same_layout && !written->sizes().equals(check.first->sizes())) ||
      (!check.same_layout && check.tensors != 2)) {
    return nullptr;
  }
  for (const Tensor* t : read) {
    const at::MemOverlapStatus overlap = at::get_overlap_status(*t, *written);  // Full: it is the written one
    if (overlap != at::MemOverlapStatus::No && overlap != at::MemOverlapStatus::Full) return nullptr;
  }
  if (kernel->into != GeneratedKernel::Into::kNo && check.same_layout) {
    if (written->scalar_type() != check.dtype || !written->strides().equals(check.first->strides()) ||
        check.first->numel() < kernel->min_numel) {
      return nullptr;  // its kWhole is not the functional op's: the upcast
    }
    std::vector<Tensor> inputs{as_into(*kernel, *written)};
    for (const Tensor* t : read) inputs.push_back(as_into(*kernel, *t));
    return run_into(*kernel, std::move(inputs)) ? written : nullptr;
  }
  std::optional<Tensor> result;
  if (check.same_layout) {
    std::vector<Tensor> inputs;
    inputs.reserve(read.size());
    for (const Tensor* t : read) inputs.push_back(as_input(*t, kernel->words));
    result = run_package(*kernel, check, std::move(inputs));
  } else {
    result = run_broadcast(*kernel, check);
  }
  if (!result || result->scalar_type() != written->scalar_type() || !result->sizes().equals(written->sizes())) {
    return nullptr;  // resized outputs, and e.g. abs_ of a complex tensor (PyTorch's error): the upcast
  }
  written->copy_(*result);
  return written;
}

// The same for an in-place or out= form of an overridden dtype (PyTorch's kernel serves it otherwise).
template <class... Args>
Tensor* run_overriding_into(const GeneratedSlots& slots, const DtypeSet& overridden, int64_t min_numel,
                            Args... args) {
  const Tensor* first = nullptr;
  auto find = [&](auto&& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Tensor>) {
      if (first == nullptr) first = &value;
    }
  };
  (find(args), ...);
  if (first == nullptr || !first->defined()) return nullptr;
  const ScalarType dtype = first->scalar_type();
  const size_t index = static_cast<size_t>(dtype);
  if (index >= kScalarTypes || !overridden[index] || first->numel() < min_numel) return nullptr;
  if (installed(slots, dtype) == nullptr) {
    ask_once(slots, dtype);
    return nullptr;
  }
  return run_generated_into<Args...>(slots, args...);
}
