// The compiled dispatch guard: a kernel in front of PyTorch's own kernel for one (overload, dispatch key).
// It looks at the arguments without leaving C++; calls that involve no 16-bit target dtype go to the original
// kernel untouched (wrapped numbers stay wrapped), the rest to the Python router, which is registered at the
// same key just before the guard and so sits underneath it.
//
// Calls the router would upcast in the common way (no views, one 16-bit complex dtype) a typed guard upcasts
// itself: upcast.h. The copy_ guard converts 16-bit complex <-> complex64 in vectorized code (convert.h), for
// every .to() between them: the upcast path's widening and rounding, and a user's. planes.h moves interleaved
// 16-bit complex words to planes of parts and back, for compiled planar regions on CPU.
//
// Two forms. A typed guard has the operator's unboxed C++ signature, so the dispatcher calls it directly and
// it calls the original's unboxed kernel, never leaving C++. Signatures it knows are listed in typed_signatures.h;
// every other operator gets the boxed guard, which scans the argument stack and costs the dispatcher's boxing
// and unboxing on top.
//
// Loaded with ctypes: a plain C interface, no Python headers, so one build serves every Python version.

#include <ATen/Parallel.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Version.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner_cpu.h>
#include <torch/library.h>

#include "torch_compat.h"

#include <array>
#include <atomic>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

using at::Tensor;
using c10::IValue;
using c10::ScalarType;

constexpr size_t kScalarTypes = static_cast<size_t>(ScalarType::NumOptions);
using DtypeSet = std::bitset<kScalarTypes>;

#include "convert.h"
#include "planes.h"
#include "upcast.h"
#include "generated.h"

struct Scan {
  bool missing = false;         // a dtype PyTorch has no kernel for
  bool partial = false;         // a dtype PyTorch serves for some arguments only
  bool real16 = false;          // a Half/BFloat16 tensor whose 16-bit complex partner is a target
  bool complex_number = false;  // a complex Scalar or wrapped complex number: real16 then promotes to it
};

// What one guard knows: the kernels on either side of it and the dtypes it hands over.
struct GuardState {
  c10::OperatorHandle op;
  c10::SafeKernelFunction original;
  c10::SafeKernelFunction router;
  DtypeSet missing, partial, real16;
  std::shared_ptr<const UpcastState> upcast;  // null when this registration never upcasts in C++
  bool converts_copies = false;               // aten::copy_ at CPU: conversion::copy_into first
  std::shared_ptr<const GeneratedSlots> generated;  // where upcasts in C++: kernels installed for it (generated.h)
  DtypeSet overridden;  // dtypes PyTorch serves here that an installed generated kernel takes (generated.h)
  int64_t overridden_min_numel = 0;  // the fewest elements of a call a generated kernel takes from PyTorch's

  void see_dtype(ScalarType dtype, Scan& scan) const {
    const size_t index = static_cast<size_t>(dtype);
    if (index >= kScalarTypes) return;
    if (missing[index]) scan.missing = true;
    if (partial[index]) scan.partial = true;
  }

  void see(const Tensor& t, Scan& scan) const {
    if (!t.defined()) return;
    const ScalarType dtype = t.scalar_type();
    see_dtype(dtype, scan);
    if (real16[static_cast<size_t>(dtype)]) scan.real16 = true;
    if (dtype == ScalarType::ComplexDouble && t.unsafeGetTensorImpl()->is_wrapped_number()) {
      scan.complex_number = true;
    }
  }
  void see(const std::optional<Tensor>& t, Scan& scan) const {
    if (t.has_value()) see(*t, scan);
  }
  void see(at::TensorList tensors, Scan& scan) const {
    for (const Tensor& t : tensors) see(t, scan);
  }
  void see(const at::ITensorListRef& tensors, Scan& scan) const {
    for (const Tensor& t : tensors) see(t, scan);
  }
  void see(const c10::List<std::optional<Tensor>>& tensors, Scan& scan) const {
    for (size_t i = 0; i < tensors.size(); ++i) see(static_cast<std::optional<Tensor>>(tensors.get(i)), scan);
  }
  void see(const c10::Scalar& value, Scan& scan) const {
    if (value.isComplex()) scan.complex_number = true;
  }
  void see(const std::optional<c10::Scalar>& value, Scan& scan) const {
    if (value.has_value()) see(*value, scan);
  }
  void see(std::optional<ScalarType> dtype, Scan& scan) const {  // dtype=
    if (dtype.has_value()) see_dtype(*dtype, scan);
  }
  template <class Other>
  void see(const Other&, Scan&) const {}

  // the Python router works out the result dtype of real16 next to a complex number
  static bool hand_over(const Scan& scan) { return scan.missing || (scan.real16 && scan.complex_number); }
};

// -- boxed: any schema -------------------------------------------------------------------------------------

// One character per schema argument, in stack order (written by the Python side from the schema):
//   T Tensor, O Tensor?, L Tensor[] or Tensor?[], N Scalar, D the dtype= argument, - anything else.
class BoxedGuard final : public c10::OperatorKernel {
 public:
  BoxedGuard(std::shared_ptr<const GuardState> state, std::string kinds)
      : state_(std::move(state)), kinds_(std::move(kinds)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    const size_t n = kinds_.size();
    const IValue* args = stack->data() + (stack->size() - n);
    Scan scan;
    for (size_t i = 0; i < n; ++i) {
      const IValue& arg = args[i];
      switch (kinds_[i]) {
        case 'T':
        case 'O':
          if (arg.isTensor()) state_->see(arg.toTensor(), scan);
          break;
        case 'L':
          if (arg.isTensorList()) {
            for (const Tensor& t : arg.toTensorList()) state_->see(t, scan);
          } else if (arg.isList()) {
            for (const IValue& v : arg.toListRef())
              if (v.isTensor()) state_->see(v.toTensor(), scan);
          }
          break;
        case 'N':
          if (arg.isComplexDouble()) scan.complex_number = true;
          break;
        case 'D':
          if (arg.isInt()) state_->see_dtype(static_cast<ScalarType>(arg.toInt()), scan);
          break;
        default:
          break;
      }
    }
    if (GuardState::hand_over(scan)) return state_->router.callBoxed(op, keys, stack);
    if (!scan.partial) return state_->original.callBoxed(op, keys, stack);
    // PyTorch serves this dtype for some arguments: try its kernel, hand the call over when it refuses
    const size_t base = stack->size() - n;
    std::vector<IValue> saved(args, args + n);
    try {
      state_->original.callBoxed(op, keys, stack);
    } catch (const c10::Error&) {
      if (stack->size() < base) throw;
      stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
      stack->insert(stack->end(), std::make_move_iterator(saved.begin()), std::make_move_iterator(saved.end()));
      state_->router.callBoxed(op, keys, stack);
    }
  }

 private:
  std::shared_ptr<const GuardState> state_;
  std::string kinds_;
};

// -- typed: the dispatcher's unboxed signature ---------------------------------------------------------------

template <class Signature>
struct Typed;

template <class Return, class... Args>
struct Typed<Return(Args...)> {
  static void register_guard(torch::Library& library, const char* name, c10::DispatchKey key,
                             std::shared_ptr<const GuardState> state) {
    library.impl(name, torch::dispatch(key, [state](c10::DispatchKeySet keys, Args... args) -> Return {
      Scan scan;
      (state->see(args, scan), ...);
      if (GuardState::hand_over(scan)) {
        if constexpr (upcastable<Return, Args...>) {
          if (state->upcast && upcast_enabled.load(std::memory_order_relaxed)) {
            UpcastCheck check;
            see_all(check, std::index_sequence_for<Args...>{}, args...);
            const ScalarType dtype = check.verdict();
            if (dtype != ScalarType::Undefined && state->upcast->takes(dtype)) {
              if constexpr (generatable<Return, Args...>) {
                if (state->generated) {
                  if (std::optional<Tensor> result = run_generated(*state->generated, args...)) {
                    state->upcast->count(dtype);
                    return *std::move(result);
                  }
                }
              } else if constexpr (generatable_into<Return, Args...>) {
                if (state->generated) {
                  if (Tensor* written = run_generated_into<Args...>(*state->generated, args...)) {
                    state->upcast->count(dtype);
                    return *written;
                  }
                }
              }
              try {
                Return result = upcast(std::index_sequence_for<Args...>{}, *state, keys, dtype, args...);
                state->upcast->count(dtype);
                return result;
              } catch (const c10::Error&) {
                // the router raises it again, worded in the caller's dtypes (nothing was written back yet)
              }
            }
          }
        }
        return call(state->router, *state, keys, args...);
      }
      if constexpr (generatable<Return, Args...>) {
        if (state->overridden.any()) {
          if (std::optional<Tensor> result = run_overriding(*state->generated, state->overridden,
                                                                  state->overridden_min_numel, args...)) {
            return *std::move(result);
          }
        }
      } else if constexpr (generatable_into<Return, Args...>) {
        if (state->overridden.any()) {
          if (Tensor* written = run_overriding_into<Args...>(*state->generated, state->overridden,
                                                             state->overridden_min_numel, args...)) {
            return *written;
          }
        }
      }
      if (!scan.partial) return call(state->original, *state, keys, args...);
      if constexpr (copy_signature) {
        if (state->converts_copies && converted_copy(args...)) return std::get<0>(std::forward_as_tuple(args...));
      }
      try {
        return call(state->original, *state, keys, args...);
      } catch (const c10::Error&) {
        return call(state->router, *state, keys, args...);
      }
    }));
  }

  // copy_'s: only 16-bit complex dtypes are partial there, so other copies never reach the conversion's checks
  static constexpr bool copy_signature = std::is_same_v<Return(Args...), Tensor&(Tensor&, const Tensor&, bool)>;
  static bool converted_copy(Tensor& dst, const Tensor& src, bool) { return conversion::copy_into(dst, src); }

  template <size_t... Index>
  static void see_all(UpcastCheck& check, std::index_sequence<Index...>, const Args&... args) {
    (check.see_at<Index, Args>(args), ...);
  }

  // widen, call the original kernel, round the results back or write the written tensor back (upcast.h)
  template <size_t... Index>
  static Return upcast(std::index_sequence<Index...>, const GuardState& state, c10::DispatchKeySet keys,
                       ScalarType dtype, Args... args) {
    Widened widened;
    Written written;
    const c10::KernelFunction& kernel = jitdtypes_compat::unboxed(state.original);
    if constexpr (std::is_same_v<Return, Tensor&>) {
      kernel.template call<Return, Args...>(state.op, keys, widen_arg<Args, Index>(args, widened, written)...);
      return write_back(written);
    } else {
      return round_results(
          kernel.template call<Return, Args...>(state.op, keys, widen_arg<Args, Index>(args, widened, written)...),
          dtype);
    }
  }

  static Return call(const c10::SafeKernelFunction& kernel, const GuardState& state, c10::DispatchKeySet keys,
                     Args... args) {
    return jitdtypes_compat::unboxed(kernel).template call<Return, Args...>(state.op, keys, std::forward<Args>(args)...);
  }
};

using TypedRegistrar = void (*)(torch::Library&, const char*, c10::DispatchKey, std::shared_ptr<const GuardState>);

#include "typed_signatures.h"

std::string signature_key(const c10::FunctionSchema& schema) {
  auto describe = [](const c10::Argument& a) {
    const bool written = a.alias_info() != nullptr && a.alias_info()->isWrite();
    return (written ? "!" : "") + a.real_type()->str();
  };
  std::string key;
  for (const c10::Argument& a : schema.arguments()) key += (key.empty() ? "" : ",") + describe(a);
  std::string returns;
  for (const c10::Argument& r : schema.returns()) returns += (returns.empty() ? "" : ",") + describe(r);
  return key + "->" + (schema.returns().size() > 1 ? "(" + returns + ")" : returns);
}

// -- C interface (ctypes) ------------------------------------------------------------------------------------
// Every function returns 0 on success, or writes a message to `error` and returns nonzero; no C++ exception
// crosses into the caller.

void write_error(char* error, size_t size, const char* message) {
  if (error != nullptr && size > 0) {
    std::strncpy(error, message, size - 1);
    error[size - 1] = '\0';
  }
}

DtypeSet parse_dtypes(const char* names) {
  // comma-separated ScalarType names as c10::toString spells them ("ComplexHalf,BComplex32")
  DtypeSet set;
  const std::string list = names == nullptr ? "" : names;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    bool found = false;
    for (size_t i = 0; i < kScalarTypes; ++i) {
      if (name == c10::toString(static_cast<ScalarType>(i))) {
        set.set(i);
        found = true;
      }
    }
    TORCH_CHECK(found, "jitdtypes guard: unknown scalar type ", name);
    start = end + 1;
  }
  return set;
}

// `names` as parse_dtypes reads them, `calls` one counter cell per name in that order; null when none.
std::shared_ptr<const UpcastState> make_upcast(const char* names, uint64_t* const* calls) {
  auto upcast = std::make_shared<UpcastState>();
  const std::string list = names == nullptr ? "" : names;
  size_t start = 0, position = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const DtypeSet one = parse_dtypes(list.substr(start, end - start).c_str());
    TORCH_CHECK(calls != nullptr && calls[position] != nullptr, "jitdtypes guard: no counter for ", names);
    for (size_t i = 0; i < kScalarTypes; ++i) {
      if (one[i]) upcast->calls[i] = calls[position];
    }
    upcast->dtypes |= one;
    ++position;
    start = end + 1;
  }
  return upcast->dtypes.none() ? nullptr : upcast;
}

// Registering over a kernel is the point; the dispatcher warns about it.
class QuietWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

// A typed guard when a listed signature is the operator's; false when none is.
bool register_typed(torch::Library& library, const std::string& qualified, c10::DispatchKey key,
                    const std::shared_ptr<const GuardState>& state) {
  const auto candidates = typed_signatures().equal_range(signature_key(state->op.schema()));
  for (auto it = candidates.first; it != candidates.second; ++it) {
    try {
      it->second(library, qualified.c_str(), key, state);
      return true;
    } catch (const c10::Error&) {
      // "Mismatch in kernel C++ signatures": the next candidate, or the boxed guard
    }
  }
  return false;
}

}  // namespace

#define JITDTYPES_EXPORT __attribute__((visibility("default")))

extern "C" {

// The kernel computed for `key` right now (PyTorch's own before anything is registered over it).
JITDTYPES_EXPORT int jitdtypes_guard_capture(const char* name, const char* overload, const char* key,
                                             void** kernel, char* error, size_t error_size) {
  try {
    const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
    *kernel = new c10::SafeKernelFunction(op.getComputedKernelForDispatchKey(c10::parseDispatchKey(key)));
    return 0;
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what());
    return 1;
  }
}

JITDTYPES_EXPORT void jitdtypes_guard_release(void* kernel) { delete static_cast<c10::SafeKernelFunction*>(kernel); }

JITDTYPES_EXPORT int jitdtypes_guard_library_new(void** library, char* error, size_t error_size) {
  try {
    *library = new torch::Library(torch::Library::IMPL, "aten", std::nullopt, __FILE__, __LINE__);
    return 0;
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what());
    return 1;
  }
}

// Destroying the library removes every guard it registered.
JITDTYPES_EXPORT void jitdtypes_guard_library_free(void* library) { delete static_cast<torch::Library*>(library); }

// Registers a guard at `key` over the kernel registered there now (the Python router); `original` is the
// kernel captured before the router was registered. *typed says which form it took.
JITDTYPES_EXPORT int jitdtypes_guard_register(void* library, const void* original, const char* name,
                                              const char* overload, const char* key, const char* kinds,
                                              const char* missing, const char* partial, const char* real16,
                                              const char* upcast, uint64_t* const* upcast_calls,
                                              const char* overridden, int64_t overridden_min_numel, int* typed,
                                              char* error, size_t error_size) {
  try {
    const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
    const c10::DispatchKey dispatch_key = c10::parseDispatchKey(key);
    TORCH_CHECK(std::strlen(kinds) == op.schema().arguments().size(),
                "jitdtypes guard: argument kinds do not match the schema of ", name, ".", overload);
    auto state = std::make_shared<const GuardState>(GuardState{
        op, *static_cast<const c10::SafeKernelFunction*>(original), op.getComputedKernelForDispatchKey(dispatch_key),
        parse_dtypes(missing), parse_dtypes(partial), parse_dtypes(real16), make_upcast(upcast, upcast_calls),
        std::strcmp(name, "aten::copy_") == 0 && overload[0] == '\0' && dispatch_key == c10::DispatchKey::CPU,
        upcast[0] != '\0' || overridden[0] != '\0' ? generated_slots(name, overload, key) : nullptr,
        parse_dtypes(overridden), overridden_min_numel});
    const std::string qualified = std::string(name).substr(std::strlen("aten::")) +
                                  (overload[0] ? std::string(".") + overload : std::string());
    auto& lib = *static_cast<torch::Library*>(library);
    QuietWarnings quiet;
    c10::WarningUtils::WarningHandlerGuard quiet_guard(&quiet);
    *typed = register_typed(lib, qualified, dispatch_key, state) ? 1 : 0;
    if (!*typed) {
      lib.impl(qualified.c_str(),
               torch::dispatch(dispatch_key,
                               torch::CppFunction::makeFromBoxedFunctor(std::make_unique<BoxedGuard>(state, kinds))));
    }
    return 0;
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what());
    return 1;
  }
}

// Whether typed guards upcast eligible calls in C++ (registrations that allow it; off until Python says).
JITDTYPES_EXPORT void jitdtypes_guard_upcast_enable(int enabled) { upcast_enabled.store(enabled != 0); }

// The conversion copy_ and the C++ upcast use (convert.h's Mode: 0 ATen's, 1 portable, 2 vector), set to `mode`
// unless it is negative; the vector kernels only where the CPU and ATen's capability allow them.
JITDTYPES_EXPORT int jitdtypes_guard_conversion(int mode) {
  if (mode >= 0) conversion::set_mode(static_cast<conversion::Mode>(mode));
  return static_cast<int>(conversion::mode());
}

// n 16-bit complex words <-> planes re[n], im[n] of their parts' bits (planes.h); split != 0: words to planes.
JITDTYPES_EXPORT void jitdtypes_guard_planes(void* words, void* re, void* im, int64_t n, int split) {
  planes::move(words, re, im, n, split != 0);
}

// Installs the AOTInductor models whose shared libraries `path` lists, a line each, named by `models` (comma-
// separated), in generated.h's GeneratedModel order, for calls of `dtype` (a ScalarType name) to `name`.`overload` at `key`
// with at least `min_numel` elements (generated.h); `words`: it takes and returns int32 words; `commutative`: its
// op's operands may swap. A first model named "into" or "into_lanes" writes into its first input. An empty `path`
// uninstalls.
JITDTYPES_EXPORT int jitdtypes_guard_generated(const char* name, const char* overload, const char* key,
                                               const char* dtype, const char* path, const char* models,
                                               int64_t min_numel, int words, int commutative, char* error,
                                               size_t error_size) {
  try {
    const DtypeSet one = parse_dtypes(dtype);
    if (path[0] == '\0') {  // uninstall: calls take the upcast again (the kernel itself stays, see generated.h)
      auto slots = generated_slots(name, overload, key);
      for (size_t i = 0; i < kScalarTypes; ++i) {
        if (one[i]) {
          slots->kernels[i].store(nullptr, std::memory_order_release);
          slots->asked[i].store(false);  // an overridden dtype's next call asks again
        }
      }
      return 0;
    }
    auto kernel = std::make_unique<GeneratedKernel>();
    std::string names = models, paths = path;
    for (size_t model = 0; model < kModels && !names.empty(); ++model) {
      const size_t comma = names.find(','), newline = paths.find('\n');
      if (paths.empty()) throw std::invalid_argument("fewer libraries than models: " + std::string(models));
      const std::string library = paths.substr(0, newline), name = names.substr(0, comma);
      if (model == kWhole && name == "into") kernel->into = GeneratedKernel::Into::kWords;  // cpu_kernels/table.py
      if (model == kWhole && name == "into_lanes") kernel->into = GeneratedKernel::Into::kLanes;
      kernel->models[model] = std::make_unique<torch::inductor::AOTIModelContainerRunnerCpu>(library, 1);
      names = comma == std::string::npos ? "" : names.substr(comma + 1);
      paths = newline == std::string::npos ? "" : paths.substr(newline + 1);
    }
    kernel->min_numel = min_numel;
    kernel->words = words != 0;
    kernel->commutative = commutative != 0;
    auto slots = generated_slots(name, overload, key);
    for (size_t i = 0; i < kScalarTypes; ++i) {
      if (one[i]) slots->kernels[i].store(kernel.get(), std::memory_order_release);
    }
    kernel.release();  // never freed (generated.h)
    return 0;
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what());
    return 1;
  }
}

// Python's cpu_kernels.first_need, for overridden dtypes (generated.h); null: none.
JITDTYPES_EXPORT void jitdtypes_guard_first_need_hook(FirstNeedHook hook) { first_need_hook.store(hook); }

// The key under which typed_signatures() would list this operator (tests and diagnostics).
JITDTYPES_EXPORT int jitdtypes_guard_signature_key(const char* name, const char* overload, char* key,
                                                   size_t key_size) {
  try {
    write_error(key, key_size,
                signature_key(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).schema()).c_str());
    return 0;
  } catch (const std::exception& e) {
    write_error(key, key_size, e.what());
    return 1;
  }
}

}  // extern "C"
