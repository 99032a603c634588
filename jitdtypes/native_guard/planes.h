// Interleaved 16-bit complex storage <-> two planes of 16-bit parts, at memory speed: the boundary of a planar
// region in compiled CPU code (jitdtypes/compile_path/layout_ops.py). Inductor can split the interleaved halves
// itself only with a transposed tile or a scalar int16 loop, and ATen's permuted copy makes several passes;
// here one pass of AVX2 shuffles moves 32 halves per step.
//
// A 16-bit complex element is a 32-bit word: real part in the low half, imaginary part in the high half
// (little endian, as compile_path/bits.py reads it). Bits are moved, never converted: any 16-bit format.

#pragma once

// Included by guard.cpp inside its anonymous namespace, after convert.h (JITDTYPES_X86, ATen/Parallel.h).

namespace planes {

void split_portable(const uint32_t* words, uint16_t* re, uint16_t* im, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    re[i] = static_cast<uint16_t>(words[i]);
    im[i] = static_cast<uint16_t>(words[i] >> 16);
  }
}

void merge_portable(const uint16_t* re, const uint16_t* im, uint32_t* words, int64_t n) {
  for (int64_t i = 0; i < n; ++i) words[i] = static_cast<uint32_t>(re[i]) | (static_cast<uint32_t>(im[i]) << 16);
}

#ifdef JITDTYPES_X86
#define JITDTYPES_AVX2 __attribute__((target("avx2")))

JITDTYPES_AVX2 void split_avx2(const uint32_t* words, uint16_t* re, uint16_t* im, int64_t n) {
  const __m256i low = _mm256_set1_epi32(0xFFFF);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i + 8));
    // packus keeps 16-bit values exactly and interleaves the 128-bit lanes (a0-3 b0-3 a4-7 b4-7): permute back
    const __m256i reals = _mm256_packus_epi32(_mm256_and_si256(a, low), _mm256_and_si256(b, low));
    const __m256i imags = _mm256_packus_epi32(_mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(re + i), _mm256_permute4x64_epi64(reals, 0xD8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(im + i), _mm256_permute4x64_epi64(imags, 0xD8));
  }
  split_portable(words + i, re + i, im + i, n - i);
}

JITDTYPES_AVX2 void merge_avx2(const uint16_t* re, const uint16_t* im, uint32_t* words, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(re + i));
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(im + i));
    // unpack works per 128-bit lane: lo holds elements 0-3 and 8-11, hi 4-7 and 12-15
    const __m256i lo = _mm256_unpacklo_epi16(r, m), hi = _mm256_unpackhi_epi16(r, m);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
  merge_portable(re + i, im + i, words + i, n - i);
}

#undef JITDTYPES_AVX2
#endif

inline bool has_avx2() {
#ifdef JITDTYPES_X86
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

constexpr int64_t kGrain = 32768;  // elements per task: ATen's copies' grain (at::internal::GRAIN_SIZE)

// n words <-> re[n], im[n]; `split` says which way.
inline void move(void* words, void* re, void* im, int64_t n, bool split) {
  auto* w = static_cast<uint32_t*>(words);
  auto* r = static_cast<uint16_t*>(re);
  auto* m = static_cast<uint16_t*>(im);
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
#ifdef JITDTYPES_X86
    if (has_avx2()) {
      split ? split_avx2(w + begin, r + begin, m + begin, end - begin)
            : merge_avx2(r + begin, m + begin, w + begin, end - begin);
      return;
    }
#endif
    split ? split_portable(w + begin, r + begin, m + begin, end - begin)
          : merge_portable(r + begin, m + begin, w + begin, end - begin);
  });
}

}  // namespace planes
