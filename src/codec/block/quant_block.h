// Per-block logic of codec "quant" (format and rules at the top of src/codec/codec_quant.cc),
// shared by the CPU codec and the CUDA kernels: the range scan on order keys, the choice of
// min and scale (or raw), the stochastic-rounding noise of an element, and the quantization and
// dequantization of one word of the segment layout. The CPU loops over the words of a block,
// a GPU thread takes one word; both run these functions, in the same float arithmetic (no FMA
// contraction on either side).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "codec/float_convert.h"
#include "common/host_device.h"
#include "common/synthetic_data.h"

namespace hycc::codec::quant {

inline constexpr uint32_t kRawMarker = 0xffffffffu;  // scale field of a raw block
inline constexpr size_t kHeaderBytes = 8;            // f32 min + f32 scale per block

HYCC_HD inline constexpr size_t round_up8(size_t n) { return (n + 7) / 8 * 8; }

// Where the areas of a payload of `count` elements start, and where block b's pieces go. The
// headers and codes form a fixed area; raw block k (the k-th raw one) starts k * block elements
// into the raw area, so a parallel encoder or decoder places every block from its ordinal alone.
struct PayloadLayout {
  uint64_t count = 0;
  uint64_t block = 0;
  uint64_t blocks = 0;
  uint64_t codes_at = 0;  // = size of the header area
  uint64_t raw_at = 0;    // = size of the fixed area
  int bits = 8;

  HYCC_HD PayloadLayout(uint64_t n, uint64_t block_size, int code_bits)
      : count(n), block(block_size), bits(code_bits) {
    blocks = (count + block - 1) / block;
    codes_at = blocks * kHeaderBytes;
    raw_at = codes_at + round_up8(count) / 8 * static_cast<uint64_t>(bits);
  }
  // Elements of block b (only the last block can be shorter).
  HYCC_HD uint64_t elements(uint64_t b) const {
    return b * block + block <= count ? block : count - b * block;
  }
  HYCC_HD uint64_t header_offset(uint64_t b) const { return b * kHeaderBytes; }
  HYCC_HD uint64_t codes_offset(uint64_t b) const {
    return codes_at + b * block / 8 * static_cast<uint64_t>(bits);
  }
  HYCC_HD uint64_t raw_offset(uint64_t ordinal, uint64_t elem_bytes) const {
    return raw_at + ordinal * block * elem_bytes;
  }
  // Elements in the raw area for `raw_blocks` raw blocks, the last block among them or not.
  HYCC_HD uint64_t raw_elements(uint64_t raw_blocks, bool last_is_raw) const {
    if (raw_blocks == 0) return 0;
    return raw_blocks * block - (last_is_raw ? block - elements(blocks - 1) : 0);
  }
};

// How one block is quantized, or that it is stored raw.
struct BlockQuant {
  bool raw = true;
  float min = 0;
  float scale = 0;
  float inv_scale = 0;  // max_code / range, 0 for a constant block so that every code is 0
};

HYCC_HD inline bool is_finite(float v) { return (f32_to_bits(v) & 0x7f800000u) != 0x7f800000u; }

// The largest decoded value of a block must be finite: checked by encoder and decoder alike.
HYCC_HD inline bool decodes_finite(float min, float scale, float max_code) {
  return is_finite(min + max_code * scale);
}

HYCC_HD inline BlockQuant choose_quant(float lo, float hi, float max_code) {
  BlockQuant q;
  // +0.0f turns -0 into +0, so that a block's header does not depend on which zero is smaller.
  lo += 0.0f;
  hi += 0.0f;
  const float range = hi - lo;
  if (!(range <= FLT_MAX)) return q;
  const float scale = range / max_code;
  if (range != 0 && scale < FLT_MIN) return q;  // the inverse would overflow, precision is lost
  if (!decodes_finite(lo, scale, max_code)) return q;
  q.raw = false;
  q.min = lo;
  q.scale = scale;
  q.inv_scale = range == 0 ? 0.0f : max_code / range;  // independent of the division above
  return q;
}

// Maps a float to an int32 whose signed order is the order of the floats: -NaN < -inf < ... <
// -0 < +0 < ... < +inf < +NaN. Integer min/max reductions vectorize (float ones only with
// -ffast-math), and one pass then finds the range and any non-finite value.
HYCC_HD inline int32_t order_key(float v) {
  const auto b = static_cast<int32_t>(f32_to_bits(v));
  return b ^ ((b >> 31) & 0x7fffffff);  // negative floats: reverse the magnitude order
}
HYCC_HD inline float from_order_key(int32_t key) {
  return bits_to_f32(static_cast<uint32_t>(key ^ ((key >> 31) & 0x7fffffff)));
}

struct KeyRange {
  int32_t lo = INT32_MAX, hi = INT32_MIN;

  HYCC_HD void add(int32_t key) {
    lo = key < lo ? key : lo;
    hi = key > hi ? key : hi;
  }
  // The range of the union (parallel reductions: an empty range is the identity).
  HYCC_HD void merge(int32_t other_lo, int32_t other_hi) {
    lo = other_lo < lo ? other_lo : lo;
    hi = other_hi > hi ? other_hi : hi;
  }
};

// Smallest and largest order_key of x[0, n).
HYCC_HD inline KeyRange key_range(const float* x, size_t n) {
  KeyRange r;
  for (size_t i = 0; i < n; ++i) r.add(order_key(x[i]));
  return r;
}

// Quantization of a block from the key range of its values; raw if it holds NaN or an infinity.
HYCC_HD inline BlockQuant quant_from_keys(KeyRange keys, float max_code) {
  if (keys.lo <= order_key(-INFINITY) || keys.hi >= order_key(INFINITY)) return {};
  return choose_quant(from_order_key(keys.lo), from_order_key(keys.hi), max_code);
}

// splitmix64 of the seed: the key from which every element's noise derives.
HYCC_HD inline uint64_t noise_key(uint64_t seed) { return splitmix64(seed); }

// Uniform noise in [0, 1) of stochastic rounding for element `index` of the tensor: 24 random
// bits from a counter-based hash of (seed, index), so the value of an element depends on nothing
// else (not on the block size, nor on how the work is split).
HYCC_HD inline float stochastic_noise(uint64_t key, uint64_t index) {
  return static_cast<float>(splitmix64(key + index) >> 40) * 0x1p-24f;
}

HYCC_HD inline constexpr int gcd_int(int a, int b) { return b == 0 ? a : gcd_int(b, a % b); }

// The word of the segment layout for a bit width: kPer codes in kBytes bytes.
template <int kBits>
struct Packing {
  static constexpr int kPer = 8 / gcd_int(kBits, 8);
  static constexpr int kBytes = kBits / gcd_int(kBits, 8);
  static constexpr uint32_t kMask = (1u << kBits) - 1;
  using Word = std::conditional_t<kPer * kBits <= 32, uint32_t, uint64_t>;
};

// The code of x: round to nearest even of (x - min) / scale, or stochastic with noise u.
template <int kBits, bool kStochastic>
HYCC_HD inline uint32_t quantize_value(float x, BlockQuant q, float u) {
  // 0 <= t <= max_code * (1 + 2^-23): x - lo rounds to at most the block's range, and
  // range * (max_code / range) carries two roundings.
  const float t = (x - q.min) * q.inv_scale;
  if constexpr (kStochastic) {
    const auto down = static_cast<int32_t>(t);        // floor, as t >= 0
    const float frac = t - static_cast<float>(down);  // exact
    const int32_t up = down + static_cast<int32_t>(u < frac);
    const auto top = static_cast<int32_t>(Packing<kBits>::kMask);
    return static_cast<uint32_t>(up < top ? up : top);
  } else {
    // Adding 2^23 leaves ulp 1: the float add rounds t to nearest even and the integer lands in
    // the low mantissa bits. t < max_code + 1/2 needs no clamp.
    return f32_to_bits(t + 0x1p23f) & Packing<kBits>::kMask;
  }
}

// Word j (0 <= j < len = n8 / kPer) of a block of n8 codes: codes of x[r * len + j] for r in
// [0, kPer), its bytes stored at codes[m * len + j]. x is a pointer or anything indexable that
// gives block element i as a float; noise(i) is the noise of block element i (stochastic only).
// Everything but `codes` is taken by value: byte stores may alias anything reached through a
// pointer or reference, which would force reloads and stop the CPU loop from vectorizing.
template <int kBits, bool kStochastic, class Values, class Noise>
HYCC_HD inline void quantize_word(Values x, size_t len, size_t j, BlockQuant q, Noise noise,
                                  uint8_t* codes) {
  using P = Packing<kBits>;
  using Word = typename P::Word;
  Word word = 0;
  for (int r = 0; r < P::kPer; ++r) {
    const size_t i = static_cast<size_t>(r) * len + j;
    const float u = kStochastic ? noise(i) : 0.0f;
    word |= static_cast<Word>(quantize_value<kBits, kStochastic>(x[i], q, u)) << (r * kBits);
  }
  for (int m = 0; m < P::kBytes; ++m) {
    codes[static_cast<size_t>(m) * len + j] = static_cast<uint8_t>(word >> (8 * m));
  }
}

// Decodes word j of a block of n8 codes: store(i, value) for block elements i = r * len + j,
// r in [0, kPer).
template <int kBits, class Store>
HYCC_HD inline void dequantize_word(const uint8_t* codes, size_t len, size_t j, float lo,
                                    float scale, Store store) {
  using P = Packing<kBits>;
  using Word = typename P::Word;
  Word word = 0;
  for (int m = 0; m < P::kBytes; ++m) {
    word |= static_cast<Word>(codes[static_cast<size_t>(m) * len + j]) << (8 * m);
  }
  for (int r = 0; r < P::kPer; ++r) {
    const auto code = static_cast<int32_t>((word >> (r * kBits)) & P::kMask);
    store(static_cast<size_t>(r) * len + j, lo + static_cast<float>(code) * scale);
  }
}

}  // namespace hycc::codec::quant
