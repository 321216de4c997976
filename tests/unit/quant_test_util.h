// Helpers of the tests of codec "quant" (quant_test.cc, quant_rotate_test.cc): the fast codec
// called with reference parameters, block headers, and finite data with the hard cases.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "codec/quant_reference.h"
#include "hycc/codec.h"
#include "test_util.h"

namespace hycc::test {

using codec::reference::QuantParams;

inline constexpr uint32_t kSpecialBit = 0x80000000u;
inline constexpr double kUlp = 0x1p-24;  // unit roundoff of float32

// Bytes with 8-byte aligned storage, as the stream layer hands payloads to codecs.
class Payload {
 public:
  explicit Payload(size_t bytes) : words_(bytes / 8 + 1), size_(bytes) {}
  explicit Payload(const std::vector<std::byte>& bytes) : Payload(bytes.size()) {
    if (!bytes.empty()) std::memcpy(words_.data(), bytes.data(), bytes.size());
  }
  std::span<std::byte> span() { return {reinterpret_cast<std::byte*>(words_.data()), size_}; }
  std::vector<std::byte> bytes() const {
    const auto* p = reinterpret_cast<const std::byte*>(words_.data());
    return {p, p + size_};
  }
  void resize(size_t bytes) {
    words_.resize(bytes / 8 + 1);
    size_ = bytes;
  }

 private:
  std::vector<uint64_t> words_;
  size_t size_;
};

inline std::string spec_of(const QuantParams& p) {
  return "quant:bits=" + std::to_string(p.bits) + ",block=" + std::to_string(p.block) +
         ",round=" + (p.stochastic ? "stochastic" : "nearest") +
         (p.rotate ? ",rotate=hadamard" : "");
}

inline std::vector<std::byte> fast_encode(const QuantParams& p, ConstTensorView in, uint64_t seed) {
  const CodecConfig config = CodecConfig::parse(spec_of(p));
  const Codec& c = config.codec();
  Payload out(c.max_payload_bytes(in.dtype, in.count));
  const size_t n = c.encode(in, out.span(), CompressOptions{seed});
  EXPECT_LE(n, c.max_payload_bytes(in.dtype, in.count));
  out.resize(n);
  return out.bytes();
}

inline void fast_decode(const QuantParams& p, const std::vector<std::byte>& payload,
                        TensorView out) {
  Payload aligned(payload);
  CodecConfig::parse(spec_of(p)).codec().decode(aligned.span(), out);
}

// Header of block b: f32 min and f32 scale, or a special block's (codec_quant.cc).
struct BlockHeader {
  uint32_t min_bits, scale_bits;
  bool special() const { return (scale_bits & kSpecialBit) != 0; }
  float min() const { return std::bit_cast<float>(min_bits); }
  // The step between codes in value: a special block's step times its decode factor.
  float scale() const {
    if (!special()) return std::bit_cast<float>(scale_bits);
    const uint32_t exponent = scale_bits >> 3 & 3u;
    const float step = std::bit_cast<float>(scale_bits & 0x7fffff00u);
    return step * (exponent == 1 ? 4.0f : exponent == 2 ? 0x1p-64f : 1.0f);
  }
  bool holds_non_finite() const { return special() && (scale_bits & 1u) != 0; }
  uint32_t non_finite_kind() const { return scale_bits >> 1 & 3u; }  // 0 NaN, 1 +inf, 2 -inf
};
inline BlockHeader header_of(const std::vector<std::byte>& payload, size_t b) {
  BlockHeader h;
  std::memcpy(&h.min_bits, payload.data() + 8 * b, 4);
  std::memcpy(&h.scale_bits, payload.data() + 8 * b + 4, 4);
  return h;
}
inline void set_header(std::vector<std::byte>& payload, size_t b, uint32_t min_bits,
                       uint32_t scale_bits) {
  std::memcpy(payload.data() + 8 * b, &min_bits, 4);
  std::memcpy(payload.data() + 8 * b + 4, &scale_bits, 4);
}
inline size_t special_blocks(const std::vector<std::byte>& payload, size_t blocks) {
  size_t special = 0;
  for (size_t b = 0; b < blocks; ++b) special += header_of(payload, b).special();
  return special;
}

// Finite data with the features quantization must get right: a constant stretch, a stretch of
// huge and one of tiny magnitudes, exact zeros, and a partial last block.
inline std::vector<float> mixed_finite(size_t count) {
  std::vector<float> v = make_data(DataKind::kLaplace, count, 11);
  for (size_t i = 0; i < count; ++i) {
    if (i % 512 >= 64 && i % 512 < 128) v[i] = 1.25f;  // constant
    if (i % 512 >= 200 && i % 512 < 260) v[i] *= 1e30f;
    if (i % 512 >= 300 && i % 512 < 330) v[i] *= 1e-30f;
    if (i % 97 == 5) v[i] = (i % 2) ? 0.0f : -0.0f;
  }
  return v;
}

}  // namespace hycc::test
