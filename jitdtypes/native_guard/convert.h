// The upcast path's conversions at memory speed: 16-bit complex <-> complex64. ATen converts
// c10::complex<Half> and c10::complex<BFloat16> one scalar at a time (several times slower than its own vectorized
// Half <-> float), and every upcast call converts its inputs and results. Here a
// 16-bit complex tensor is 2n 16-bit words read as reals, converted with AVX2/F16C where the CPU has them, over
// at::parallel_for like ATen's copies. Real Half/BFloat16 <-> float32 stay ATen's: those are vectorized there.
//
// Bit-identical to ATen's scalar conversion, which depends on the CPU capability ATen runs with:
//   Half -> float      exact; a signalling NaN is quieted, its payload kept (hardware and portable code alike)
//   float -> Half      round to nearest even; NaN: ATen's AVX2/AVX512 code converts with F16C, keeping the top
//                      payload bits (quieted), its DEFAULT code gives the canonical NaN 0x7E00 with the sign
//   BFloat16 -> float  the bits shifted, exact
//   float -> BFloat16  round to nearest even; NaN: 0x7FC0 (c10::detail::round_to_nearest_even)
// The vector kernels serve ATen's AVX2/AVX512 capabilities (F16C semantics), selected at run time
// (__builtin_cpu_supports); elsewhere (DEFAULT capability, no AVX2/F16C, not x86) ATen's own copy runs.
//
// JITDTYPES_CONVERSION (read once; set_mode for tests): "vector", the best of those; "portable", the kernel that
// needs no CPU feature, with the NaN rule of ATen's capability; unset or "aten", ATen's own copy (the default,
// see initial_mode).

#pragma once

// Included by guard.cpp inside its anonymous namespace; ATen/Parallel.h and ATen/Version.h come with it.

#if defined(__x86_64__) || defined(__i386__)
#define JITDTYPES_X86 1
#endif

namespace conversion {

enum class Mode : int { Aten = 0, Portable = 1, Vector = 2 };

using Widen = void (*)(const uint16_t*, float*, int64_t);
using Narrow = void (*)(const float*, uint16_t*, int64_t);

struct Kernels {
  Widen widen_half, widen_bfloat16;
  Narrow narrow_half, narrow_bfloat16;
};

// -- portable -------------------------------------------------------------------------------------------------
// c10's own scalar conversions, compiled here without CPU features. Not vectorized by the compiler (ATen's own
// scalar copy is faster under its DEFAULT capability), so taken only
// on request: the fallback the tests check bit for bit, where no CPU feature is needed.

inline uint16_t f16c_nan(uint32_t bits) {  // what vcvtps2ph makes of a float NaN
  return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7E00u | ((bits >> 13) & 0x3FFu));
}

void widen_half_portable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(c10::Half(src[i], c10::Half::from_bits()));
}

template <bool F16cNans>
void narrow_half_portable(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = c10::bit_cast<uint32_t>(src[i]);
    const uint16_t rounded = c10::Half(src[i]).x;
    dst[i] = F16cNans && (bits & 0x7FFFFFFFu) > 0x7F800000u ? f16c_nan(bits) : rounded;
  }
}

void widen_bfloat16_portable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = c10::bit_cast<float>(static_cast<uint32_t>(src[i]) << 16);
}

void narrow_bfloat16_portable(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = c10::detail::round_to_nearest_even(src[i]);
}

// -- AVX2 + F16C ----------------------------------------------------------------------------------------------

#ifdef JITDTYPES_X86
#define JITDTYPES_VECTOR __attribute__((target("avx2,f16c")))

JITDTYPES_VECTOR void widen_half_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 8));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(a));
    _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(b));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

JITDTYPES_VECTOR void narrow_half_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    const __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 8), b);
  }
  for (; i < n; ++i) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

JITDTYPES_VECTOR void widen_bfloat16_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i words = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    const __m256i more = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 8)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(words, 16)));
    _mm256_storeu_ps(dst + i + 8, _mm256_castsi256_ps(_mm256_slli_epi32(more, 16)));
  }
  widen_bfloat16_portable(src + i, dst + i, n - i);
}

// round_to_nearest_even on 8 lanes, as 32-bit words holding the result in their low half
JITDTYPES_VECTOR inline __m256i bfloat16_words(__m256 value) {
  const __m256i bits = _mm256_castps_si256(value);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256 is_nan = _mm256_cmp_ps(value, value, _CMP_UNORD_Q);
  return _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7FC0), _mm256_castps_si256(is_nan));
}

JITDTYPES_VECTOR void narrow_bfloat16_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i packed = _mm256_packus_epi32(bfloat16_words(_mm256_loadu_ps(src + i)),
                                               bfloat16_words(_mm256_loadu_ps(src + i + 8)));
    // packus interleaves the 128-bit lanes: a0-3 b0-3 a4-7 b4-7
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_permute4x64_epi64(packed, 0xD8));
  }
  narrow_bfloat16_portable(src + i, dst + i, n - i);
}

#undef JITDTYPES_VECTOR
#endif

// -- choice ---------------------------------------------------------------------------------------------------

// ATen's AVX2/AVX512 code converts Half with F16C (its NaN rule), its DEFAULT code portably.
inline bool aten_uses_f16c() {
#ifdef JITDTYPES_X86
  static const bool uses = at::get_cpu_capability() != "DEFAULT";
  return uses;
#else
  return false;
#endif
}

inline bool cpu_has_vector_kernels() {
#ifdef JITDTYPES_X86
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

// Without the vector kernels ATen's own copy, which the portable kernel does not beat.
inline Mode best_mode() { return cpu_has_vector_kernels() && aten_uses_f16c() ? Mode::Vector : Mode::Aten; }

// ATen's copy by default: on an idle 2-core machine (benchmarks/cpu_eager.py) the vector kernels lost end to end,
// where each call writes a fresh buffer (x.to(complex64), x.sum()), although they convert several times faster into
// an existing buffer.
inline Mode initial_mode() {
  const char* requested = std::getenv("JITDTYPES_CONVERSION");
  const std::string value = requested == nullptr ? "" : requested;
  if (value == "vector") return best_mode();
  if (value == "portable") return Mode::Portable;
  return Mode::Aten;
}

inline std::atomic<int>& current_mode() {
  static std::atomic<int> mode{static_cast<int>(initial_mode())};
  return mode;
}

inline Mode mode() { return static_cast<Mode>(current_mode().load(std::memory_order_relaxed)); }

// The vector kernels are taken only where best_mode() would take them.
inline Mode set_mode(Mode requested) {
  const Mode granted = requested == Mode::Vector ? best_mode() : requested;
  current_mode().store(static_cast<int>(granted));
  return granted;
}

inline const Kernels& kernels(Mode chosen) {
  static const Kernels portable_f16c{widen_half_portable, widen_bfloat16_portable, narrow_half_portable<true>,
                                     narrow_bfloat16_portable};
  static const Kernels portable_plain{widen_half_portable, widen_bfloat16_portable, narrow_half_portable<false>,
                                      narrow_bfloat16_portable};
#ifdef JITDTYPES_X86
  static const Kernels vector{widen_half_avx2, widen_bfloat16_avx2, narrow_half_avx2, narrow_bfloat16_avx2};
  if (chosen == Mode::Vector) return vector;
#endif
  return aten_uses_f16c() ? portable_f16c : portable_plain;
}

// -- tensors --------------------------------------------------------------------------------------------------

// The kernel converting `from` into `to` word for word, or null for any other pair.
struct Step {
  Widen widen = nullptr;
  Narrow narrow = nullptr;
  explicit operator bool() const { return widen != nullptr || narrow != nullptr; }
};

inline Step step(ScalarType from, ScalarType to, const Kernels& k) {
  if (to == ScalarType::ComplexFloat) {
    if (from == ScalarType::ComplexHalf) return {k.widen_half, nullptr};
    if (jitdtypes_compat::is_bcomplex32(from)) return {k.widen_bfloat16, nullptr};
  } else if (from == ScalarType::ComplexFloat) {
    if (to == ScalarType::ComplexHalf) return {nullptr, k.narrow_half};
    if (jitdtypes_compat::is_bcomplex32(to)) return {nullptr, k.narrow_bfloat16};
  }
  return {};
}

// A plain CPU tensor whose elements are its storage from data_ptr on: ATen's copy_ would add nothing we skip.
inline bool plain_dense(const Tensor& t) {
  return t.defined() && t.layout() == c10::kStrided && t.device().is_cpu() && !t.is_conj() && !t.is_neg() &&
         !jitdtypes_compat::has_names(t) && !t._is_zerotensor() && t.is_non_overlapping_and_dense();
}

constexpr int64_t kGrain = 32768;  // ATen's copies' (at::internal::GRAIN_SIZE), in elements of a real dtype

inline void run(const Step& how, const void* src, void* dst, int64_t words) {
  at::parallel_for(0, words, kGrain, [&](int64_t begin, int64_t end) {
    if (how.widen != nullptr) {
      how.widen(static_cast<const uint16_t*>(src) + begin, static_cast<float*>(dst) + begin, end - begin);
    } else {
      how.narrow(static_cast<const float*>(src) + begin, static_cast<uint16_t*>(dst) + begin, end - begin);
    }
  });
}

// dst.copy_(src) when it is one of our conversions between tensors of one layout; false: ATen's copy_ does it.
inline bool copy_into(const Tensor& dst, const Tensor& src) {
  const Mode chosen = mode();
  if (chosen == Mode::Aten) return false;
  const Step how = step(src.scalar_type(), dst.scalar_type(), kernels(chosen));
  if (!how || !plain_dense(src) || !plain_dense(dst) || dst.numel() == 0 || !dst.sizes().equals(src.sizes()) ||
      !dst.strides().equals(src.strides()) || dst.storage().is_alias_of(src.storage())) {
    return false;
  }
  run(how, src.const_data_ptr(), dst.mutable_data_ptr(), 2 * src.numel());
  return true;
}

// src.to(dtype), as to() lays it out for a dense tensor (its strides); to() itself for anything else.
inline Tensor to(const Tensor& src, ScalarType dtype) {
  const Mode chosen = mode();
  const Step how = chosen == Mode::Aten ? Step{} : step(src.scalar_type(), dtype, kernels(chosen));
  if (!how || !plain_dense(src)) return src.to(dtype);
  Tensor result = at::empty_strided(src.sizes(), src.strides(), src.options().dtype(dtype));
  if (src.numel() != 0) run(how, src.const_data_ptr(), result.mutable_data_ptr(), 2 * src.numel());
  return result;
}

}  // namespace conversion
