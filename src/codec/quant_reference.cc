#include "codec/quant_reference.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include "codec/float_io.h"
#include "common/synthetic_data.h"
#include "hycc/error.h"

namespace hycc::codec::reference {
namespace {

constexpr uint32_t kSpecialBit = 0x80000000u;

// Bytes of the block headers and of the codes: the fixed part of a payload.
size_t header_bytes(const QuantParams& p, size_t count) {
  return (count + p.block - 1) / p.block * 8;
}
size_t fixed_bytes(const QuantParams& p, size_t count) {
  return header_bytes(p, count) + (count + 7) / 8 * static_cast<size_t>(p.bits);
}

// Bit `k` of code `i` of a block of n8 codes: its bit offset from the start of the block's
// codes, in the segment layout.
size_t code_bit_offset(const QuantParams& p, size_t n8, size_t i, int k) {
  const int shared = std::gcd(p.bits, 8);
  const size_t codes_per_word = static_cast<size_t>(8 / shared);
  const size_t len = n8 / codes_per_word;  // words, and bytes per plane
  const size_t segment = i / len, word = i % len;
  const size_t bit_in_word = segment * static_cast<size_t>(p.bits) + static_cast<size_t>(k);
  return ((bit_in_word / 8) * len + word) * 8 + bit_in_word % 8;
}

struct BlockQuant {
  bool regular = false;
  float min = 0, max = 0, scale = 0;
};

BlockQuant choose(const float* x, size_t n, float max_code) {
  BlockQuant q;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return q;
  }
  const float lo = *std::min_element(x, x + n) + 0.0f;  // +0.0f: -0 becomes +0
  const float hi = *std::max_element(x, x + n) + 0.0f;
  const float range = hi - lo;
  if (std::isinf(range)) return q;
  const float scale = range / max_code;
  if (range != 0 && !std::isnormal(scale)) return q;
  const float top = lo + max_code * scale;
  if (std::isinf(top)) return q;
  q.regular = true;
  q.min = lo;
  q.max = hi;
  q.scale = scale;
  return q;
}

uint32_t quantize(float v, const BlockQuant& q, float max_code, bool stochastic, float noise) {
  const float range = q.max - q.min;
  const float inv_scale = range == 0 ? 0.0f : max_code / range;
  const float t = std::min((v - q.min) * inv_scale, max_code);
  if (!stochastic) return static_cast<uint32_t>(std::nearbyint(t));  // ties to even
  const float down = std::floor(t);
  return static_cast<uint32_t>(down) + (noise < t - down ? 1u : 0u);
}

// A special block (codec_quant.cc, "Special blocks"): what it holds and how it codes it.
struct Special {
  bool non_finite = false;
  uint32_t kind = 0;      // 0 NaN, 1 +inf, 2 -inf
  uint32_t exponent = 0;  // 0: factor 1, 1: quantized at 1/4, 2: at 2^64
  uint32_t top = 0;       // largest code of a finite value
  float min = 0, step = 0;
};

float factor_for(uint32_t exponent, bool encoding) {
  const int e = exponent == 1 ? -2 : exponent == 2 ? 64 : 0;
  return std::ldexp(1.0f, encoding ? e : -e);
}

// The step rounded up to a float32 whose 8 low bits are 0.
float with_free_low_byte(float step) {
  uint32_t bits = std::bit_cast<uint32_t>(step);
  if (bits % 256 != 0) bits = bits - bits % 256 + 256;
  return std::bit_cast<float>(bits);
}

Special choose_special(const float* x, size_t n, uint32_t max_code) {
  Special s;
  std::vector<float> finite;
  bool nan = false, plus = false, minus = false;
  for (size_t i = 0; i < n; ++i) {
    if (std::isfinite(x[i])) {
      finite.push_back(x[i]);
    } else {
      nan = nan || std::isnan(x[i]);
      plus = plus || (std::isinf(x[i]) && x[i] > 0);
      minus = minus || (std::isinf(x[i]) && x[i] < 0);
    }
  }
  s.non_finite = nan || plus || minus;
  if (s.non_finite) s.kind = !nan && plus && !minus ? 1 : !nan && minus && !plus ? 2 : 0;
  s.top = max_code - (s.non_finite ? 1 : 0);
  if (finite.empty()) return s;
  float lo = *std::min_element(finite.begin(), finite.end()) + 0.0f;
  float hi = *std::max_element(finite.begin(), finite.end()) + 0.0f;
  if (s.top == 0) {
    s.min = lo / 2 + hi / 2;
    return s;
  }
  const float top = static_cast<float>(s.top);
  const float range = hi - lo;
  if (std::isinf(range)) {
    s.exponent = 1;
  } else if (range != 0 && range / top < FLT_MIN) {
    s.exponent = 2;
  } else if (std::isinf(lo + top * with_free_low_byte(range / top))) {
    s.exponent = 1;
  }
  lo *= factor_for(s.exponent, true);
  hi *= factor_for(s.exponent, true);
  s.min = lo;
  s.step = with_free_low_byte((hi - lo) / top);
  return s;
}

uint32_t special_code(float v, const Special& s, uint32_t max_code, bool stochastic, float noise) {
  if (!std::isfinite(v)) return max_code;
  const float inverse = s.step == 0 ? 0.0f : 1.0f / s.step;
  const float t = (v * factor_for(s.exponent, true) - s.min) * inverse;
  float code = std::nearbyint(t);  // ties to even
  if (stochastic) code = std::floor(t) + (noise < t - std::floor(t) ? 1.0f : 0.0f);
  return std::min(static_cast<uint32_t>(code), s.top);
}

void put_u32(std::vector<std::byte>& out, size_t at, uint32_t v) { std::memcpy(&out[at], &v, 4); }
uint32_t get_u32(std::span<const std::byte> in, size_t at) {
  uint32_t v;
  std::memcpy(&v, &in[at], 4);
  return v;
}

// rotate=hadamard, by the recursive definition: H [lo; hi] = [H (lo + hi); H (lo - hi)].
void hadamard(float* x, size_t n) {
  if (n == 1) return;
  const size_t h = n / 2;
  for (size_t i = 0; i < h; ++i) {
    const float a = x[i], b = x[i + h];
    x[i] = a + b;
    x[i + h] = a - b;
  }
  hadamard(x, h);
  hadamard(x + h, h);
}

// 2^-k with k = floor(log2(n) / 2) (forward) or the rest of log2(n) (inverse).
float rotation_scale(size_t n, bool forward) {
  const int log2n = std::countr_zero(n);
  return std::ldexp(1.0f, forward ? -(log2n / 2) : -(log2n - log2n / 2));
}

bool rotated(const QuantParams& p, size_t n) { return p.rotate && n == p.block; }

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:quant reference", what));
}

}  // namespace

float quant_noise(uint64_t seed, uint64_t index) {
  const uint64_t random_bits = splitmix64(splitmix64(seed) + index);
  return static_cast<float>(random_bits >> 40) / 16777216.0f;  // 24 bits, exact
}

std::vector<std::byte> quant_encode(const QuantParams& p, ConstTensorView in, uint64_t seed) {
  const size_t count = in.count;
  const float max_code = static_cast<float>((1 << p.bits) - 1);
  std::vector<float> x(count);
  if (count != 0) load_as_float(in, 0, count, x.data());
  std::vector<std::byte> out(fixed_bytes(p, count), std::byte{0});
  for (size_t begin = 0; begin < count; begin += p.block) {
    const size_t n = std::min(p.block, count - begin);
    const size_t header_at = begin / p.block * 8;
    const size_t codes_at = header_bytes(p, count) + begin / 8 * static_cast<size_t>(p.bits);
    bool too_large = false;
    if (rotated(p, n)) {
      for (size_t i = 0; i < n; ++i) too_large = too_large || !(std::fabs(x[begin + i]) < 0x1p100f);
      if (!too_large) {
        hadamard(&x[begin], n);
        for (size_t i = 0; i < n; ++i) x[begin + i] *= rotation_scale(n, true);
      }
    }
    const BlockQuant q = choose(&x[begin], n, max_code);
    const size_t n8 = (n + 7) / 8 * 8;
    std::vector<uint32_t> codes(n8, 0);  // padding codes are 0
    if (!q.regular || too_large) {
      std::vector<float> values(n);
      load_as_float(in, begin, n, values.data());  // not rotated
      const Special sp = choose_special(values.data(), n, static_cast<uint32_t>(max_code));
      const uint32_t flags = (sp.non_finite ? 1u : 0u) | sp.kind << 1 | sp.exponent << 3;
      std::memcpy(&out[header_at], &sp.min, 4);
      put_u32(out, header_at + 4, kSpecialBit | std::bit_cast<uint32_t>(sp.step) | flags);
      for (size_t i = 0; i < n; ++i) {
        codes[i] = special_code(values[i], sp, static_cast<uint32_t>(max_code), p.stochastic,
                                quant_noise(seed, begin + i));
      }
    } else {
      std::memcpy(&out[header_at], &q.min, 4);
      std::memcpy(&out[header_at + 4], &q.scale, 4);
      for (size_t i = 0; i < n; ++i) {
        codes[i] = quantize(x[begin + i], q, max_code, p.stochastic, quant_noise(seed, begin + i));
      }
    }
    for (size_t i = 0; i < n8; ++i) {
      const uint32_t code = codes[i];
      for (int k = 0; k < p.bits; ++k) {
        if (((code >> k) & 1u) == 0) continue;
        const size_t bit = code_bit_offset(p, n8, i, k);
        out[codes_at + bit / 8] |= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
      }
    }
  }
  return out;
}

void quant_decode(const QuantParams& p, std::span<const std::byte> payload, TensorView out) {
  const size_t count = out.count;
  const float max_code = static_cast<float>((1 << p.bits) - 1);
  if (payload.size() != fixed_bytes(p, count)) corrupt("payload size is not its blocks' size");
  for (size_t begin = 0; begin < count; begin += p.block) {
    const size_t n = std::min(p.block, count - begin);
    const size_t header_at = begin / p.block * 8;
    const size_t codes_at = header_bytes(p, count) + begin / 8 * static_cast<size_t>(p.bits);
    const uint32_t min_bits = get_u32(payload, header_at);
    const uint32_t scale_bits = get_u32(payload, header_at + 4);
    const float lo = std::bit_cast<float>(min_bits);
    const bool special = (scale_bits & kSpecialBit) != 0;
    const uint32_t flags = scale_bits % 256;
    const bool non_finite = special && (flags & 1) != 0;
    const uint32_t kind = flags >> 1 & 3, exponent = flags >> 3 & 3;
    const float scale =
        std::bit_cast<float>(special ? scale_bits - kSpecialBit - flags : scale_bits);
    const float top = max_code - (non_finite ? 1.0f : 0.0f);
    const bool scale_ok =
        special ? scale == 0 || std::isnormal(scale) : scale_bits == 0 || std::isnormal(scale);
    const bool flags_ok =
        !special || (flags < 32 && kind < 3 && exponent < 3 && (non_finite || kind == 0));
    if (!std::isfinite(lo) || !scale_ok || !flags_ok || std::isinf(lo + top * scale)) {
      corrupt(scale_bits == 0xffffffffu ? "raw block of an older format" : "invalid block header");
    }
    const size_t n8 = (n + 7) / 8 * 8;
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t code = 0;
      for (int k = 0; k < p.bits; ++k) {
        const size_t bit = code_bit_offset(p, n8, i, k);
        const auto byte = std::to_integer<uint32_t>(payload[codes_at + bit / 8]);
        code |= ((byte >> (bit % 8)) & 1u) << k;
      }
      values[i] = lo + static_cast<float>(code) * scale;
      if (!special) continue;
      if (non_finite && code == static_cast<uint32_t>(max_code)) {
        values[i] = kind == 1   ? INFINITY
                    : kind == 2 ? -INFINITY
                                : std::bit_cast<float>(0x7fc00000u);
        continue;
      }
      values[i] *= factor_for(exponent, false);
      if (std::isinf(values[i])) values[i] = std::copysign(FLT_MAX, values[i]);
    }
    if (rotated(p, n) && !special) {
      for (float& v : values) v *= rotation_scale(n, false);
      hadamard(values.data(), n);
    }
    store_from_float(values.data(), n, out, begin);
  }
}

}  // namespace hycc::codec::reference
