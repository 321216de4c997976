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

constexpr uint32_t kRawMarker = 0xffffffffu;

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
  bool raw = true;
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
  q.raw = false;
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
  const size_t count = in.count, elem_bytes = dtype_size(in.dtype);
  const float max_code = static_cast<float>((1 << p.bits) - 1);
  std::vector<float> x(count);
  if (count != 0) load_as_float(in, 0, count, x.data());
  std::vector<std::byte> out(fixed_bytes(p, count), std::byte{0});
  const auto* src = static_cast<const std::byte*>(in.data);
  uint32_t raw_ordinal = 0;
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
    BlockQuant q = choose(&x[begin], n, max_code);
    if (too_large) q.raw = true;
    if (q.raw) {
      put_u32(out, header_at, raw_ordinal++);
      put_u32(out, header_at + 4, kRawMarker);
      out.insert(out.end(), src + begin * elem_bytes, src + (begin + n) * elem_bytes);
      continue;
    }
    std::memcpy(&out[header_at], &q.min, 4);
    std::memcpy(&out[header_at + 4], &q.scale, 4);
    const size_t n8 = (n + 7) / 8 * 8;
    for (size_t i = 0; i < n8; ++i) {
      const float v = i < n ? x[begin + i] : q.min;  // padding quantizes to code 0
      const uint32_t code = quantize(v, q, max_code, p.stochastic, quant_noise(seed, begin + i));
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
  const size_t count = out.count, elem_bytes = dtype_size(out.dtype);
  const float max_code = static_cast<float>((1 << p.bits) - 1);
  if (payload.size() < fixed_bytes(p, count)) corrupt("payload shorter than its fixed part");
  auto* dst = static_cast<std::byte*>(out.data);
  size_t raw_at = fixed_bytes(p, count);
  uint32_t raw_ordinal = 0;
  for (size_t begin = 0; begin < count; begin += p.block) {
    const size_t n = std::min(p.block, count - begin);
    const size_t header_at = begin / p.block * 8;
    const size_t codes_at = header_bytes(p, count) + begin / 8 * static_cast<size_t>(p.bits);
    const uint32_t min_bits = get_u32(payload, header_at);
    const uint32_t scale_bits = get_u32(payload, header_at + 4);
    if (scale_bits == kRawMarker) {
      if (min_bits != raw_ordinal++) corrupt("raw block out of order");
      if (payload.size() - raw_at < n * elem_bytes) corrupt("raw block past the payload");
      std::memcpy(dst + begin * elem_bytes, payload.data() + raw_at, n * elem_bytes);
      raw_at += n * elem_bytes;
      continue;
    }
    float lo, scale;
    std::memcpy(&lo, &min_bits, 4);
    std::memcpy(&scale, &scale_bits, 4);
    const bool scale_ok = scale_bits == 0 || (std::isnormal(scale) && scale > 0);
    if (!std::isfinite(lo) || !scale_ok || std::isinf(lo + max_code * scale)) {
      corrupt("invalid block header");
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
    }
    if (rotated(p, n)) {
      for (float& v : values) v *= rotation_scale(n, false);
      hadamard(values.data(), n);
    }
    store_from_float(values.data(), n, out, begin);
  }
  if (raw_at != payload.size()) corrupt("payload longer than its blocks");
}

}  // namespace hycc::codec::reference
