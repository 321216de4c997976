// The CPU's zfp steps around the bit planes for four blocks at once: block_integers and
// block_floats of codec/block/zfp_block.h with the four blocks in the four lanes of SSE2
// registers (value i of every block in register i), in the same integer and float arithmetic,
// so the results are the same bits (cvttps2dq is truncate_like_x86, cvtdq2ps the int-to-float
// conversion). The bit planes stay one block at a time. Without SSE2 the scalar functions run.
// tests/unit/zfp_block_x4_test.cc compares both. put_values / take_values run a stream's
// values through them for the fixed-rate and fixed-accuracy writers and readers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "codec/block/zfp_block.h"

namespace hycc::codec::zfp {

inline constexpr uint32_t kGroupBlocks = 4;

// Four consecutive blocks before their bit planes: block j's exponent and negabinary integers.
struct BlockGroup {
  int emax[kGroupBlocks];
  uint32_t u[kGroupBlocks][kBlockValues];
};

#if defined(__SSE2__)
namespace x4 {

inline void transpose(__m128i& a, __m128i& b, __m128i& c, __m128i& d) {
  const __m128i ab_lo = _mm_unpacklo_epi32(a, b), ab_hi = _mm_unpackhi_epi32(a, b);
  const __m128i cd_lo = _mm_unpacklo_epi32(c, d), cd_hi = _mm_unpackhi_epi32(c, d);
  a = _mm_unpacklo_epi64(ab_lo, cd_lo);
  b = _mm_unpackhi_epi64(ab_lo, cd_lo);
  c = _mm_unpacklo_epi64(ab_hi, cd_hi);
  d = _mm_unpackhi_epi64(ab_hi, cd_hi);
}

inline __m128i max_epi32(__m128i a, __m128i b) {
  const __m128i a_greater = _mm_cmpgt_epi32(a, b);
  return _mm_or_si128(_mm_and_si128(a_greater, a), _mm_andnot_si128(a_greater, b));
}

inline __m128i select(__m128i mask, __m128i if_set, __m128i if_clear) {
  return _mm_or_si128(_mm_and_si128(mask, if_set), _mm_andnot_si128(mask, if_clear));
}

// forward_lift with lane j holding block j.
inline void forward_lift(__m128i& x, __m128i& y, __m128i& z, __m128i& w) {
  x = _mm_add_epi32(x, w);
  x = _mm_srai_epi32(x, 1);
  w = _mm_sub_epi32(w, x);
  z = _mm_add_epi32(z, y);
  z = _mm_srai_epi32(z, 1);
  y = _mm_sub_epi32(y, z);
  x = _mm_add_epi32(x, z);
  x = _mm_srai_epi32(x, 1);
  z = _mm_sub_epi32(z, x);
  w = _mm_add_epi32(w, y);
  w = _mm_srai_epi32(w, 1);
  y = _mm_sub_epi32(y, w);
  w = _mm_add_epi32(w, _mm_srai_epi32(y, 1));
  y = _mm_sub_epi32(y, _mm_srai_epi32(w, 1));
}

// inverse_lift with lane j holding block j.
inline void inverse_lift(__m128i& x, __m128i& y, __m128i& z, __m128i& w) {
  y = _mm_add_epi32(y, _mm_srai_epi32(w, 1));
  w = _mm_sub_epi32(w, _mm_srai_epi32(y, 1));
  y = _mm_add_epi32(y, w);
  w = _mm_slli_epi32(w, 1);
  w = _mm_sub_epi32(w, y);
  z = _mm_add_epi32(z, x);
  x = _mm_slli_epi32(x, 1);
  x = _mm_sub_epi32(x, z);
  y = _mm_add_epi32(y, z);
  z = _mm_slli_epi32(z, 1);
  z = _mm_sub_epi32(z, y);
  w = _mm_add_epi32(w, x);
  x = _mm_slli_epi32(x, 1);
  x = _mm_sub_epi32(x, w);
}

}  // namespace x4
#endif

// block_integers of the four blocks x[0..16).
inline void group_integers(const float* x, BlockGroup& g) {
#if defined(__SSE2__)
  __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 4));
  __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 8));
  __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 12));
  x4::transpose(v0, v1, v2, v3);  // v_i: value i of blocks 0..3
  // block_exponent: the largest magnitude's bits (below 2^31, so signed comparisons order them).
  const __m128i magnitude = _mm_set1_epi32(0x7fffffff);
  const __m128i max_abs =
      x4::max_epi32(x4::max_epi32(_mm_and_si128(v0, magnitude), _mm_and_si128(v1, magnitude)),
                    x4::max_epi32(_mm_and_si128(v2, magnitude), _mm_and_si128(v3, magnitude)));
  const __m128i biased = _mm_srli_epi32(max_abs, 23);
  // frexp's exponent clamped to -126 (biased - 126, denormals included), -127 when every value
  // is zero.
  const __m128i emax = x4::select(_mm_cmpeq_epi32(max_abs, _mm_setzero_si128()),
                                  _mm_set1_epi32(-127), _mm_sub_epi32(biased, _mm_set1_epi32(126)));
  // power_of_two(30 - emax): 30 - emax lies in [-98, 157], a normal float or infinity.
  const __m128i scale_biased = _mm_sub_epi32(_mm_set1_epi32(30 + 127), emax);
  const __m128i scale_bits =
      x4::select(_mm_cmpgt_epi32(scale_biased, _mm_set1_epi32(254)), _mm_set1_epi32(0x7f800000),
                 _mm_slli_epi32(scale_biased, 23));
  const __m128 scale = _mm_castsi128_ps(scale_bits);
  v0 = _mm_cvttps_epi32(_mm_mul_ps(scale, _mm_castsi128_ps(v0)));
  v1 = _mm_cvttps_epi32(_mm_mul_ps(scale, _mm_castsi128_ps(v1)));
  v2 = _mm_cvttps_epi32(_mm_mul_ps(scale, _mm_castsi128_ps(v2)));
  v3 = _mm_cvttps_epi32(_mm_mul_ps(scale, _mm_castsi128_ps(v3)));
  x4::forward_lift(v0, v1, v2, v3);
  const __m128i mask = _mm_set1_epi32(static_cast<int>(kNegabinaryMask));
  v0 = _mm_xor_si128(_mm_add_epi32(v0, mask), mask);
  v1 = _mm_xor_si128(_mm_add_epi32(v1, mask), mask);
  v2 = _mm_xor_si128(_mm_add_epi32(v2, mask), mask);
  v3 = _mm_xor_si128(_mm_add_epi32(v3, mask), mask);
  x4::transpose(v0, v1, v2, v3);  // v_j: block j
  _mm_storeu_si128(reinterpret_cast<__m128i*>(g.u[0]), v0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(g.u[1]), v1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(g.u[2]), v2);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(g.u[3]), v3);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(g.emax), emax);
#else
  for (uint32_t j = 0; j < kGroupBlocks; ++j) g.emax[j] = block_integers(x + 4 * j, g.u[j]);
#endif
}

// block_floats of the four blocks of g into x[0..16).
inline void group_floats(const BlockGroup& g, float* x) {
#if defined(__SSE2__)
  __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.u[0]));
  __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.u[1]));
  __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.u[2]));
  __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.u[3]));
  x4::transpose(v0, v1, v2, v3);  // v_i: value i of blocks 0..3
  const __m128i mask = _mm_set1_epi32(static_cast<int>(kNegabinaryMask));
  v0 = _mm_sub_epi32(_mm_xor_si128(v0, mask), mask);
  v1 = _mm_sub_epi32(_mm_xor_si128(v1, mask), mask);
  v2 = _mm_sub_epi32(_mm_xor_si128(v2, mask), mask);
  v3 = _mm_sub_epi32(_mm_xor_si128(v3, mask), mask);
  x4::inverse_lift(v0, v1, v2, v3);
  // power_of_two(emax - 30) may be denormal or zero: one block at a time.
  const __m128 scale = _mm_setr_ps(power_of_two(g.emax[0] - 30), power_of_two(g.emax[1] - 30),
                                   power_of_two(g.emax[2] - 30), power_of_two(g.emax[3] - 30));
  v0 = _mm_castps_si128(_mm_mul_ps(scale, _mm_cvtepi32_ps(v0)));
  v1 = _mm_castps_si128(_mm_mul_ps(scale, _mm_cvtepi32_ps(v1)));
  v2 = _mm_castps_si128(_mm_mul_ps(scale, _mm_cvtepi32_ps(v2)));
  v3 = _mm_castps_si128(_mm_mul_ps(scale, _mm_cvtepi32_ps(v3)));
  x4::transpose(v0, v1, v2, v3);  // v_j: block j
  _mm_storeu_si128(reinterpret_cast<__m128i*>(x), v0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(x + 4), v1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(x + 8), v2);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(x + 12), v3);
#else
  for (uint32_t j = 0; j < kGroupBlocks; ++j) block_floats(g.emax[j], g.u[j], x + 4 * j);
#endif
}

// block_integers of n (1..4) values, padded as zfp pads a partial block, handed to
// put(emax, u).
template <class Put>
void put_block(const float* values, size_t n, Put&& put) {
  float block[kBlockValues];
  const float* x = values;
  if (n < kBlockValues) {
    std::memcpy(block, values, n * sizeof(float));
    pad_partial_block(block, static_cast<uint32_t>(n));
    x = block;
  }
  uint32_t u[kBlockValues];
  const int emax = block_integers(x, u);
  put(emax, u);
}

// The blocks of values[0, n), in order, handed to put(emax, u): whole blocks four at a time, a
// partial last block padded.
template <class Put>
void put_values(const float* values, size_t n, Put&& put) {
  size_t i = 0;
  for (; i + kGroupBlocks * kBlockValues <= n; i += kGroupBlocks * kBlockValues) {
    BlockGroup g;
    group_integers(values + i, g);
    for (uint32_t j = 0; j < kGroupBlocks; ++j) put(g.emax[j], g.u[j]);
  }
  for (; i < n; i += kBlockValues)
    put_block(values + i, std::min<size_t>(kBlockValues, n - i), put);
}

// n (1..4) values of the block that take(u) reads (returning its emax).
template <class Take>
void take_block(float* values, size_t n, Take&& take) {
  uint32_t u[kBlockValues];
  const int emax = take(u);
  float block[kBlockValues];
  block_floats(emax, u, n == kBlockValues ? values : block);
  if (n < kBlockValues) std::memcpy(values, block, n * sizeof(float));
}

// The blocks that take(u) reads into values[0, n): whole blocks four at a time, then the values
// of a partial last block.
template <class Take>
void take_values(float* values, size_t n, Take&& take) {
  size_t i = 0;
  for (; i + kGroupBlocks * kBlockValues <= n; i += kGroupBlocks * kBlockValues) {
    BlockGroup g;
    for (uint32_t j = 0; j < kGroupBlocks; ++j) g.emax[j] = take(g.u[j]);
    group_floats(g, values + i);
  }
  for (; i < n; i += kBlockValues)
    take_block(values + i, std::min<size_t>(kBlockValues, n - i), take);
}

}  // namespace hycc::codec::zfp
