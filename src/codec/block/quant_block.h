// Per-block logic of codec "quant" (format and rules at the top of src/codec/codec_quant.cc),
// shared by the CPU codec and the CUDA kernels: the range scan on order keys, the choice of
// min and scale (or a special block's), the stochastic-rounding noise of an element, and the
// quantization and dequantization of one word of the segment layout. The CPU loops over the words
// of a block, a GPU thread takes one word; both run these functions, in the same float arithmetic
// (no FMA contraction on either side).
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

inline constexpr size_t kHeaderBytes = 8;  // f32 min + f32 scale per block

HYCC_HD inline constexpr size_t round_up8(size_t n) { return (n + 7) / 8 * 8; }

// Where the areas of a payload of `count` elements start, and where block b's pieces go. The
// size depends only on (count, block, bits): special blocks are stored in-band.
struct PayloadLayout {
  uint64_t count = 0;
  uint64_t block = 0;
  uint64_t blocks = 0;
  uint64_t codes_at = 0;  // = size of the header area
  uint64_t bytes = 0;     // the payload's size
  int bits = 8;

  HYCC_HD PayloadLayout(uint64_t n, uint64_t block_size, int code_bits)
      : count(n), block(block_size), bits(code_bits) {
    blocks = (count + block - 1) / block;
    codes_at = blocks * kHeaderBytes;
    bytes = codes_at + round_up8(count) / 8 * static_cast<uint64_t>(bits);
  }
  // Elements of block b (only the last block can be shorter).
  HYCC_HD uint64_t elements(uint64_t b) const {
    return b * block + block <= count ? block : count - b * block;
  }
  HYCC_HD uint64_t header_offset(uint64_t b) const { return b * kHeaderBytes; }
  HYCC_HD uint64_t codes_offset(uint64_t b) const {
    return codes_at + b * block / 8 * static_cast<uint64_t>(bits);
  }
};

// How a regular block is quantized, or that it must be stored as a special block.
struct BlockQuant {
  bool special = true;
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
  q.special = false;
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

// Quantization of a block from the key range of its values; special if it holds NaN or an
// infinity.
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

// Special blocks (format at the top of codec_quant.cc): what regular blocks cannot hold (NaN,
// infinities, a range that overflows, a step below FLT_MIN, a top decoded value that overflows,
// and under rotate=hadamard a magnitude too large to rotate), stored in the block's own header
// and codes, so that the payload's size never depends on the data. The header's scale field has
// its sign bit set, the flags in its low byte and the step in the rest.
inline constexpr uint32_t kSpecialBit = 0x80000000u;
inline constexpr uint32_t kFlagsMask = 0xffu;
inline constexpr uint32_t kHoldsNonFinite = 1u;  // the top code marks a non-finite value
inline constexpr uint32_t kKindShift = 1;        // 2 bits: which one, NonFiniteKind
inline constexpr uint32_t kExponentShift = 3;    // 2 bits: the block's factor, Exponent
inline constexpr uint32_t kUsedFlags = 0x1fu;

enum NonFiniteKind : uint32_t { kNaN = 0, kPlusInfinity = 1, kMinusInfinity = 2 };
// Values are quantized times encode_factor and decoded times decode_factor: blocks whose range
// overflows are quantized at a quarter, blocks whose step would be subnormal at 2^64.
enum Exponent : uint32_t { kUnscaled = 0, kQuarter = 1, kTiny = 2 };

HYCC_HD inline float encode_factor(uint32_t exponent) {
  return exponent == kQuarter ? 0.25f : exponent == kTiny ? 0x1p64f : 1.0f;
}
HYCC_HD inline float decode_factor(uint32_t exponent) {
  return exponent == kQuarter ? 4.0f : exponent == kTiny ? 0x1p-64f : 1.0f;
}
HYCC_HD inline bool is_nan(float v) { return (f32_to_bits(v) & 0x7fffffffu) > 0x7f800000u; }

// What a special block holds: the order keys of its finite values and which non-finite values.
struct SpecialScan {
  KeyRange finite;
  uint32_t seen = 0;  // bit 0: NaN, bit 1: +inf, bit 2: -inf

  HYCC_HD void add(float v) {
    if (is_finite(v)) {
      finite.add(order_key(v));
    } else {
      seen |= is_nan(v) ? 1u : v > 0 ? 2u : 4u;
    }
  }
  HYCC_HD void merge(const SpecialScan& o) {
    finite.merge(o.finite.lo, o.finite.hi);
    seen |= o.seen;
  }
  HYCC_HD bool any_finite() const { return finite.lo <= finite.hi; }
};

HYCC_HD inline SpecialScan special_scan(const float* x, size_t n) {
  SpecialScan s;
  for (size_t i = 0; i < n; ++i) s.add(x[i]);
  return s;
}

// A step rounded up to a multiple of 256 in its bits, so that the low byte can hold the flags.
HYCC_HD inline float step_with_free_low_byte(float step) {
  const uint32_t b = f32_to_bits(step);
  return (b & kFlagsMask) == 0 ? step : bits_to_f32((b | kFlagsMask) + 1);
}

// How a special block is coded: finite values x as codes of (x * encode_factor - min) / step in
// [0, top], non-finite ones (if any) as the code max_code = top + 1.
struct SpecialQuant {
  float min = 0;
  float step = 0;
  float inv_step = 0;  // 1 / step, 0 for step 0
  float factor = 1;    // encode_factor
  uint32_t top = 0;
  uint32_t max_code = 0;
  uint32_t scale_bits = kSpecialBit;  // the header's scale field
};

HYCC_HD inline SpecialQuant choose_special(const SpecialScan& s, uint32_t max_code) {
  SpecialQuant q;
  q.max_code = max_code;
  uint32_t flags = 0;
  if (s.seen != 0) {
    const uint32_t kind = s.seen == 2u ? kPlusInfinity : s.seen == 4u ? kMinusInfinity : kNaN;
    flags |= kHoldsNonFinite | kind << kKindShift;
  }
  q.top = max_code - (s.seen != 0 ? 1u : 0u);
  if (s.any_finite()) {
    float lo = from_order_key(s.finite.lo) + 0.0f;  // -0 as +0, as regular blocks
    float hi = from_order_key(s.finite.hi) + 0.0f;
    if (q.top == 0) {
      q.min = lo * 0.5f + hi * 0.5f;  // one finite code: the middle of the range
    } else {
      const float top = static_cast<float>(q.top);
      const float range = hi - lo;
      uint32_t exponent = kUnscaled;
      if (!(range <= FLT_MAX)) {
        exponent = kQuarter;
      } else if (range != 0 && range / top < FLT_MIN) {
        exponent = kTiny;
      } else if (!decodes_finite(lo, step_with_free_low_byte(range / top), top)) {
        exponent = kQuarter;
      }
      q.factor = encode_factor(exponent);
      lo *= q.factor;
      hi *= q.factor;
      q.min = lo;
      q.step = step_with_free_low_byte((hi - lo) / top);
      q.inv_step = q.step == 0 ? 0.0f : 1.0f / q.step;
      flags |= exponent << kExponentShift;
    }
  }
  q.scale_bits = kSpecialBit | f32_to_bits(q.step) | flags;
  return q;
}

// The code of x in a special block (u: stochastic rounding's noise).
template <bool kStochastic>
HYCC_HD inline uint32_t special_code(float x, const SpecialQuant& q, float u) {
  if (!is_finite(x)) return q.max_code;
  const float t = (x * q.factor - q.min) * q.inv_step;  // >= 0: x * factor >= min
  uint32_t code;
  if constexpr (kStochastic) {
    const auto down = static_cast<uint32_t>(t);
    code = down + (u < t - static_cast<float>(down) ? 1u : 0u);
  } else {
    code = f32_to_bits(t + 0x1p23f) & 0x7fffffu;  // round to nearest even, t < 2^22
  }
  return code < q.top ? code : q.top;
}

// A special block's header as the decoder reads it.
struct SpecialHeader {
  float min = 0;
  float step = 0;
  float factor = 1;  // decode_factor
  uint32_t top = 0;
  uint32_t max_code = 0;
  bool holds_non_finite = false;
  float non_finite = 0;
};

// Reads and validates a special block's header (scale field with kSpecialBit); false if it is
// malformed.
HYCC_HD inline bool read_special(uint32_t min_bits, uint32_t scale_bits, uint32_t max_code,
                                 SpecialHeader& h) {
  const uint32_t flags = scale_bits & kFlagsMask;
  const uint32_t kind = flags >> kKindShift & 3u, exponent = flags >> kExponentShift & 3u;
  h.holds_non_finite = (flags & kHoldsNonFinite) != 0;
  if ((scale_bits & kSpecialBit) == 0 || (flags & ~kUsedFlags) != 0 || kind > kMinusInfinity ||
      (!h.holds_non_finite && kind != 0) || exponent > kTiny) {
    return false;
  }
  h.min = bits_to_f32(min_bits);
  h.step = bits_to_f32(scale_bits & ~(kSpecialBit | kFlagsMask));
  h.factor = decode_factor(exponent);
  h.max_code = max_code;
  h.top = max_code - (h.holds_non_finite ? 1u : 0u);
  h.non_finite = kind == kPlusInfinity    ? INFINITY
                 : kind == kMinusInfinity ? -INFINITY
                                          : bits_to_f32(0x7fc00000u);
  const bool step_ok = h.step == 0 || (h.step >= FLT_MIN && h.step <= FLT_MAX);
  return is_finite(h.min) && step_ok && decodes_finite(h.min, h.step, static_cast<float>(h.top));
}

// Whether a block's header is well formed: a regular one's finite min, zero or normal scale and
// finite top decoded value, or a special one's (read_special). The decoders on both sides check
// every header with it.
HYCC_HD inline bool header_valid(uint32_t min_bits, uint32_t scale_bits, uint32_t max_code) {
  if ((scale_bits & kSpecialBit) != 0) {
    SpecialHeader h;
    return read_special(min_bits, scale_bits, max_code, h);
  }
  const float lo = bits_to_f32(min_bits), scale = bits_to_f32(scale_bits);
  const bool scale_ok = scale == 0 ? scale_bits == 0 : (scale >= FLT_MIN && scale <= FLT_MAX);
  return is_finite(lo) && scale_ok && decodes_finite(lo, scale, static_cast<float>(max_code));
}

// The value of a code of a special block: finite codes clamped to the finite range (the input
// was finite), the top code of a block holding non-finite values its non-finite value.
HYCC_HD inline float special_value(uint32_t code, const SpecialHeader& h) {
  if (h.holds_non_finite && code == h.max_code) return h.non_finite;
  const float v = (h.min + static_cast<float>(code) * h.step) * h.factor;
  return is_finite(v) ? v : v > 0 ? FLT_MAX : -FLT_MAX;
}

// The segment layout for a bit width known at run time (special blocks): code i of a block of
// n8 codes, and word j of its codes from code_of(i) for the block elements i of the word.
struct SegmentLayout {
  int bits;
  size_t per, bytes, len;
  HYCC_HD SegmentLayout(int code_bits, size_t n8)
      : bits(code_bits),
        per(static_cast<size_t>(8 / gcd_int(code_bits, 8))),
        bytes(static_cast<size_t>(code_bits / gcd_int(code_bits, 8))),
        len(n8 / per) {}

  template <class CodeOf>
  HYCC_HD void put_word(size_t j, CodeOf code_of, uint8_t* codes) const {
    uint64_t word = 0;
    for (size_t r = 0; r < per; ++r) {
      word |= static_cast<uint64_t>(code_of(r * len + j)) << (r * static_cast<size_t>(bits));
    }
    for (size_t m = 0; m < bytes; ++m) codes[m * len + j] = static_cast<uint8_t>(word >> (8 * m));
  }
  HYCC_HD uint32_t code(const uint8_t* codes, size_t i) const {
    const size_t j = i % len, r = i / len;
    uint64_t word = 0;
    for (size_t m = 0; m < bytes; ++m) word |= static_cast<uint64_t>(codes[m * len + j]) << (8 * m);
    return static_cast<uint32_t>(word >> (r * static_cast<size_t>(bits))) & ((1u << bits) - 1);
  }
};

}  // namespace hycc::codec::quant
