// The "eb" (error-bounded) codec: the scalar definitions that fix its output (the quantizer, the
// reconstruction, the bound check), shared by the fast path in codec_eb.cc and by the slow,
// obvious reference encoder and decoder below, which are the oracle of the fast path's tests.
// The payload layout is documented at the top of codec_eb.cc.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "codec/float_convert.h"
#include "hycc/dtype.h"

namespace hycc::codec::eb {

// Values per block. Every block holds kBlockValues values except the last one.
inline constexpr size_t kBlockValues = 64;
// Bytes before the first block: the resolved absolute bound (f64) and the quantization step (f64).
inline constexpr size_t kPreambleBytes = 16;

// Block header byte: bits 0-5 the bit width of the packed values, bit 6 delta mode, bit 7 the
// block has outliers. Width kVerbatimWidth (with bits 6 and 7 clear) marks a verbatim block.
inline constexpr uint8_t kWidthMask = 0x3f;
inline constexpr uint8_t kDeltaFlag = 0x40;
inline constexpr uint8_t kOutlierFlag = 0x80;
inline constexpr unsigned kMaxWidth = 32;
inline constexpr unsigned kVerbatimWidth = 63;
// A base is a zigzag-coded int32 in LEB128: at most 5 bytes.
inline constexpr size_t kMaxVarintBytes = 5;

// Largest |q| the quantizer produces. Below 2^30, offsets (q - min q) and deltas
// (q_i - q_{i-1} - min delta) span less than 2^32 and pack into at most 32 bits; a value that would
// need more is as cheap to store raw (an outlier).
inline constexpr double kMaxQuantum = 0x1p30 - 1;
// Adding and subtracting 1.5 * 2^52 rounds a double of magnitude below 2^51 to the nearest
// integer, ties to even, in plain arithmetic that vectorizes (unlike std::nearbyint on SSE2).
inline constexpr double kRoundMagic = 0x1.8p52;
// The step is capped at 2^128: beyond it every finite float quantizes to q = 0 or +-1 anyway, and
// q * step stays finite in double.
inline constexpr double kMaxStep = 0x1p128;

// Bytes of one outlier section's position data for k outliers among n values: k position bytes
// when that is shorter than a bitmap of n bits, else the bitmap.
inline size_t outlier_index_bytes(size_t k, size_t n) { return k < (n + 7) / 8 ? k : (n + 7) / 8; }

// Number of bits needed to hold values in [0, range].
inline unsigned bit_width(uint32_t range) { return static_cast<unsigned>(std::bit_width(range)); }

// The quantizer of one tensor: q = round(x / step), reconstruction q * step.
struct Quantizer {
  double bound = 0;     // |x - decoded| <= bound for every finite x (absolute, resolved)
  double step = 1;      // quantization step: 2 * bound, capped, or a stand-in when bound is 0
  double inv_step = 1;  // 1 / step: the encoder multiplies (its choice of q is checked anyway)
};

// The step for a resolved bound. When the bound is 0 (rel on a constant tensor) only exact
// reconstructions are acceptable: the step is then |first finite value| (so a constant tensor
// quantizes to q = +-1 exactly), or 1 if that is 0 or there is none.
inline Quantizer make_quantizer(double bound, float first_finite) {
  Quantizer qz;
  qz.bound = bound;
  if (bound > 0) {
    qz.step = std::fmin(2 * bound, kMaxStep);
  } else {
    const double c = std::fabs(static_cast<double>(first_finite));
    qz.step = c > 0 ? c : 1.0;
  }
  qz.inv_step = 1.0 / qz.step;
  return qz;
}

// Candidate quantum of x; false if x is not finite or |x / step| exceeds kMaxQuantum.
inline bool quantize(float x, double inv_step, int32_t& q) {
  const double y = static_cast<double>(x) * inv_step;
  const bool in_range = std::fabs(y) <= kMaxQuantum;  // false for NaN and infinities
  const double rounded = in_range ? (y + kRoundMagic) - kRoundMagic : 0.0;
  q = static_cast<int32_t>(rounded);
  return in_range;
}

// The value the decoder produces for q before rounding to the output dtype. One double multiply,
// one rounding to float: both sides compute exactly this.
inline float reconstruct(int32_t q, double step) {
  return static_cast<float>(static_cast<double>(q) * step);
}

// Rounds a float to the dtype (nearest even) and widens it back, as storing and loading does.
template <DType kDType>
inline float round_to_dtype(float v) {
  if constexpr (kDType == DType::kBF16) return bf16_to_f32(f32_to_bf16(v));
  if constexpr (kDType == DType::kF16) return f16_to_f32(f32_to_f16(v));
  return v;
}

inline float round_to_dtype(float v, DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return round_to_dtype<DType::kBF16>(v);
    case DType::kF16:
      return round_to_dtype<DType::kF16>(v);
    case DType::kF32:
      break;
  }
  return v;
}

// The guarantee, measured in double as a user would: |x - decoded| <= bound.
inline bool within_bound(float x, float decoded, double bound) {
  return std::fabs(static_cast<double>(x) - static_cast<double>(decoded)) <= bound;
}

// Chooses the quantum of x: the rounded quotient if its decoded value (in the output dtype) is
// within the bound, else its neighbour on the other side of x, else none (x is an outlier).
// Rounding q * step to float, or to a 16-bit dtype, can push the first candidate past the bound.
inline bool choose_quantum(float x, const Quantizer& qz, DType dtype, int32_t& q) {
  if (!quantize(x, qz.inv_step, q)) return false;
  if (within_bound(x, round_to_dtype(reconstruct(q, qz.step), dtype), qz.bound)) return true;
  const int32_t other = static_cast<double>(x) > static_cast<double>(q) * qz.step ? q + 1 : q - 1;
  if (std::fabs(static_cast<double>(other)) > kMaxQuantum) return false;
  if (!within_bound(x, round_to_dtype(reconstruct(other, qz.step), dtype), qz.bound)) return false;
  q = other;
  return true;
}

// The absolute bound of rel=`rel` for finite values spanning [lo, hi], never negative; saturates
// at the largest double instead of overflowing.
inline double relative_bound(double rel, float lo, float hi) {
  const double bound = rel * (static_cast<double>(hi) - static_cast<double>(lo));
  if (!(bound > 0)) return 0.0;  // also turns -0 (from hi = -0, lo = +0) into +0
  return std::isfinite(bound) ? bound : std::numeric_limits<double>::max();
}

// The first finite element as float, or 0 if there is none (only needed when the bound is 0).
float first_finite(ConstTensorView in);

// Checks the payload preamble (resolved bound, step); returns what is wrong, or nullptr.
inline const char* preamble_error(double bound, double step) {
  if (!(bound >= 0) || !std::isfinite(bound)) return "invalid bound in the preamble";
  if (!(step > 0) || !std::isfinite(step)) return "invalid step in the preamble";
  if (bound > 0 && step != make_quantizer(bound, 0.0f).step) return "step does not match the bound";
  return nullptr;
}

}  // namespace hycc::codec::eb

namespace hycc::codec::reference {

// The bound a spec resolves to for `in`: `value` itself for abs; for rel, relative_bound() over
// the smallest and largest finite elements (0 when there are none).
double eb_resolve_bound(ConstTensorView in, bool relative, double value);

// The whole payload for `in` under the resolved absolute bound, written element by element and
// bit by bit. The fast encoder must produce these bytes exactly.
std::vector<std::byte> eb_encode(ConstTensorView in, double bound);

// Decodes a payload into `out`, checking every field; throws CorruptStream if malformed.
void eb_decode(std::span<const std::byte> payload, TensorView out);

}  // namespace hycc::codec::reference
