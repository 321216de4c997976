// "eb": error-bounded lossy compression. Every finite decoded value x' of an input x satisfies
// |x - x'| <= bound, measured after rounding x' to the tensor's dtype; NaN (payload included)
// and +-Inf come back bit for bit (-0 may come back as +0). Spec "eb:abs=X" fixes the bound to
// X; "eb:rel=X" resolves it per tensor to X * (max - min) over the finite values, at encode time.
// Both sides must run in the default floating-point environment (no flush-to-zero).
//
// Method: linear quantization with step 2 * bound, q = round(x / step), x' = float(q * step)
// (eb::reconstruct, shared with the decoder). The encoder checks every x' in the output dtype;
// where float or dtype rounding would break the bound it tries the other neighbour of x, and a
// value that still fails (or is not finite, or has |x / step| >= 2^30) is an outlier stored raw.
// The integers q are exact, so per block the encoder picks whichever packs narrower: offsets
// q - min(q), or deltas q_i - q_{i-1} - min(delta) (smooth data gives small deltas, without any
// drift since the deltas are of integers). A block that would not be smaller than its raw
// elements is stored verbatim, which bounds the payload.
//
// Payload (little-endian; empty when the tensor has no elements):
//   bound  f64  the resolved absolute bound (informative; a decoder checks step against it)
//   step   f64  the quantization step: min(2 * bound, 2^128), or, when bound is 0 (rel on a
//               constant tensor), |first finite value| or 1
//   then one block per 64 values (the last block holds the rest), decoded in order:
//   header u8   bits 0-5 width w (0..32) of the packed values, bit 6 delta mode, bit 7 outliers;
//               0x3f alone marks a verbatim block: n raw elements of the dtype follow, nothing else
//   base        LEB128 of the zigzag-coded int32 min(q) (offset mode) or min(delta) (delta mode),
//               1..5 bytes, no overlong forms
//   [outliers]  k u8 (1..n), then k increasing position bytes if k < ceil(n / 8), else a bitmap of
//               ceil(n / 8) bytes (bit i % 8 of byte i / 8 marks value i), then k raw elements of
//               the dtype in position order
//   packed      ceil(n * w / 8) bytes, value i in bits [i * w, (i + 1) * w), least significant
//               bit first, padding bits zero
// Quanta, modulo 2^32: offset mode q_i = base + v_i; delta mode q_i = q_{i-1} + base + v_i, where
// q_{-1} is the last quantum of the previous coded block (0 for the first). An outlier position
// carries the quantum of its predecessor, so it costs no width; its value is the raw element.
//
// The per-block logic (summary, plan, writing, parsing, unpacking) is codec/block/eb_block.h,
// shared with the CUDA kernels; this file adds the vectorized choice of quanta and unrolled
// packers for full blocks.
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "codec/eb_reference.h"
#include "codec/params_io.h"
#include "codec/registry.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

using eb::kBlockValues;

constexpr std::string_view kHelp =
    "abs=X or rel=X, exactly one, X in [2.2e-308, 1.8e308] (no default): |x - x'| <= X (abs), or "
    "<= X * (max - min) of the tensor's finite values (rel)";

// Header parameter bytes: [0] 0 = abs, 1 = rel; [8, 16) the spec's X as f64; the rest zero.
constexpr size_t kModeAt = 0;
constexpr size_t kValueAt = 8;

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:eb", what));
}

// Element storage and conversions of one dtype.
template <DType kDType>
struct Element {
  using Bits = std::conditional_t<kDType == DType::kF32, uint32_t, uint16_t>;
  static float to_float(Bits b) {
    if constexpr (kDType == DType::kF32) {
      return bits_to_f32(b);
    } else if constexpr (kDType == DType::kBF16) {
      return bf16_to_f32(b);
    } else {
      return f16_to_f32(b);
    }
  }
  static Bits from_float(float f) {
    if constexpr (kDType == DType::kF32) {
      return f32_to_bits(f);
    } else if constexpr (kDType == DType::kBF16) {
      return f32_to_bf16(f);
    } else {
      return f32_to_f16(f);
    }
  }
};

// Bit packing of a full block: 64 values of W bits are exactly W little-endian 64-bit words.
// One function per width, unrolled at compile time, so that every shift is a constant.
template <unsigned W, size_t I>
inline void pack_one(const uint32_t* values, uint64_t* words) {
  constexpr size_t kBit = I * W, kWord = kBit / 64, kShift = kBit % 64;
  words[kWord] |= static_cast<uint64_t>(values[I]) << kShift;
  if constexpr (kShift + W > 64) {
    words[kWord + 1] |= static_cast<uint64_t>(values[I]) >> (64 - kShift);
  }
}

template <unsigned W, size_t I>
inline void unpack_one(const uint64_t* words, uint32_t* values) {
  constexpr size_t kBit = I * W, kWord = kBit / 64, kShift = kBit % 64;
  uint64_t v = words[kWord] >> kShift;
  if constexpr (kShift + W > 64) v |= words[kWord + 1] << (64 - kShift);
  values[I] = static_cast<uint32_t>(v & ((uint64_t{1} << W) - 1));
}

template <unsigned W, size_t... I>
void pack_full_block(const uint32_t* values, uint8_t* out, std::index_sequence<I...>) {
  if constexpr (W > 0) {
    uint64_t words[W] = {};
    (pack_one<W, I>(values, words), ...);
    std::memcpy(out, words, 8 * W);
  }
}

template <unsigned W, size_t... I>
void unpack_full_block(const uint8_t* in, uint32_t* values, std::index_sequence<I...>) {
  if constexpr (W == 0) {
    std::fill(values, values + kBlockValues, 0u);
  } else {
    uint64_t words[W];
    std::memcpy(words, in, 8 * W);
    (unpack_one<W, I>(words, values), ...);
  }
}

using PackFn = void (*)(const uint32_t*, uint8_t*);
using UnpackFn = void (*)(const uint8_t*, uint32_t*);

template <size_t... W>
constexpr std::array<PackFn, sizeof...(W)> pack_table(std::index_sequence<W...>) {
  return {[](const uint32_t* v, uint8_t* out) {
    pack_full_block<W>(v, out, std::make_index_sequence<kBlockValues>());
  }...};
}

template <size_t... W>
constexpr std::array<UnpackFn, sizeof...(W)> unpack_table(std::index_sequence<W...>) {
  return {[](const uint8_t* in, uint32_t* v) {
    unpack_full_block<W>(in, v, std::make_index_sequence<kBlockValues>());
  }...};
}

constexpr auto kPackFullBlock = pack_table(std::make_index_sequence<eb::kMaxWidth + 1>());
constexpr auto kUnpackFullBlock = unpack_table(std::make_index_sequence<eb::kMaxWidth + 1>());

// Packs n values of `width` bits; full blocks take the unrolled packer of their width, the last
// block the shared one (eb::pack_values, which the device runs for every block).
uint8_t* pack(const uint32_t* values, size_t n, unsigned width, uint8_t* p) {
  if (n != kBlockValues) return eb::pack_values(values, static_cast<uint32_t>(n), width, p);
  kPackFullBlock[width](values, p);
  return p + 8 * width;
}

// The inverse of pack().
void unpack(const uint8_t* packed, size_t n, unsigned width, uint32_t* values) {
  if (n != kBlockValues) return eb::unpack_values(packed, static_cast<uint32_t>(n), width, values);
  kUnpackFullBlock[width](packed, values);
}

// Loads n elements as floats (exact).
template <DType kDType>
void load_floats(const typename Element<kDType>::Bits* src, size_t n, float* x) {
  for (size_t i = 0; i < n; ++i) x[i] = Element<kDType>::to_float(src[i]);
}

// Smallest and largest of n floats, ignoring NaN and infinities, folded into lo and hi.
void fold_finite_range(const float* x, size_t n, float& lo, float& hi) {
  size_t i = 0;
#if defined(__SSE2__)
  // Four lanes; a non-finite lane is replaced by +inf (for min) or -inf (for max).
  const __m128 kAbs = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  const __m128 kMax = _mm_set1_ps(std::numeric_limits<float>::max());
  const __m128 kInf = _mm_set1_ps(std::numeric_limits<float>::infinity());
  const __m128 kMinusInf = _mm_set1_ps(-std::numeric_limits<float>::infinity());
  __m128 lo4 = _mm_set1_ps(lo), hi4 = _mm_set1_ps(hi);
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    const __m128 finite = _mm_cmple_ps(_mm_and_ps(v, kAbs), kMax);  // false for NaN
    const __m128 v_finite = _mm_and_ps(v, finite);
    lo4 = _mm_min_ps(lo4, _mm_or_ps(v_finite, _mm_andnot_ps(finite, kInf)));
    hi4 = _mm_max_ps(hi4, _mm_or_ps(v_finite, _mm_andnot_ps(finite, kMinusInf)));
  }
  float lanes[8];
  _mm_storeu_ps(lanes, lo4);
  _mm_storeu_ps(lanes + 4, hi4);
  for (int l = 0; l < 4; ++l) {
    lo = std::min(lo, lanes[l]);
    hi = std::max(hi, lanes[4 + l]);
  }
#endif
  for (; i < n; ++i) {
    if (std::isfinite(x[i])) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
  }
}

// Smallest and largest finite element, as a rel bound needs; false if there is none.
template <DType kDType>
bool finite_range(ConstTensorView in, float& lo, float& hi) {
  using E = Element<kDType>;
  const auto* src = static_cast<const typename E::Bits*>(in.data);
  lo = std::numeric_limits<float>::infinity();
  hi = -std::numeric_limits<float>::infinity();
  float chunk[1024];
  for (size_t begin = 0; begin < in.count; begin += 1024) {
    const size_t n = std::min<size_t>(1024, in.count - begin);
    load_floats<kDType>(src + begin, n, chunk);
    fold_finite_range(chunk, n, lo, hi);
  }
  return lo <= hi;
}

// The first candidate quantum of each of n values (eb::quantize) and a mask of those whose
// decoded value is within the bound: the common case, computed without branches.
template <DType kDType>
uint64_t first_candidates(const float* x, size_t n, const eb::Quantizer& qz, int32_t* q) {
  uint64_t fits = 0;
  size_t i = 0;
#if defined(__SSE2__)
  // Two doubles at a time, the very operations of eb::quantize, eb::reconstruct,
  // eb::round_to_dtype and eb::within_bound (the compiler does not vectorize those on SSE2).
  if constexpr (kDType != DType::kF16) {
    const __m128d kAbs = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffff));
    const __m128d kMagic = _mm_set1_pd(eb::kRoundMagic);
    const __m128d kMaxQ = _mm_set1_pd(eb::kMaxQuantum);
    const __m128d inv = _mm_set1_pd(qz.inv_step), step = _mm_set1_pd(qz.step);
    const __m128d bound = _mm_set1_pd(qz.bound);
    for (; i + 2 <= n; i += 2) {
      const __m128 x2 = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
      const __m128d xd = _mm_cvtps_pd(x2);
      const __m128d y = _mm_mul_pd(xd, inv);
      const __m128d in_range = _mm_cmple_pd(_mm_and_pd(y, kAbs), kMaxQ);  // false for NaN
      const __m128d rounded = _mm_and_pd(_mm_sub_pd(_mm_add_pd(y, kMagic), kMagic), in_range);
      const __m128i qi = _mm_cvttpd_epi32(rounded);  // exact: `rounded` holds integers
      __m128 decoded = _mm_cvtpd_ps(_mm_mul_pd(_mm_cvtepi32_pd(qi), step));
      if constexpr (kDType == DType::kBF16) {  // f32_bits_to_bf16 of a non-NaN, widened back
        const __m128i u = _mm_castps_si128(decoded);
        const __m128i lsb = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
        const __m128i r = _mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7fff)), lsb);
        decoded = _mm_castsi128_ps(_mm_and_si128(r, _mm_set1_epi32(static_cast<int>(0xffff0000u))));
      }
      const __m128d err = _mm_and_pd(_mm_sub_pd(xd, _mm_cvtps_pd(decoded)), kAbs);
      const __m128d ok = _mm_and_pd(_mm_cmple_pd(err, bound), in_range);
      fits |= static_cast<uint64_t>(_mm_movemask_pd(ok)) << i;
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), qi);
    }
  }
#endif
  for (; i < n; ++i) {
    const bool in_range = eb::quantize(x[i], qz.inv_step, q[i]);
    const float decoded = eb::round_to_dtype<kDType>(eb::reconstruct(q[i], qz.step));
    if (in_range && eb::within_bound(x[i], decoded, qz.bound)) fits |= uint64_t{1} << i;
  }
  return fits;
}

// Encodes every block of `in` after the preamble; returns the end of the payload. The choice of
// quanta is vectorized here; the summary, the plan and the writing of each block are the shared
// functions of codec/block/eb_block.h that the device runs.
template <DType kDType>
uint8_t* encode_blocks(ConstTensorView in, const eb::Quantizer& qz, uint8_t* p) {
  using E = Element<kDType>;
  constexpr uint32_t kElem = sizeof(typename E::Bits);
  const auto* src = static_cast<const typename E::Bits*>(in.data);
  float x[kBlockValues];
  int32_t q[kBlockValues];
  uint32_t values[kBlockValues];
  int32_t carry = 0;  // last quantum of the previous coded block
  for (size_t begin = 0; begin < in.count; begin += kBlockValues) {
    const size_t n = std::min(kBlockValues, in.count - begin);
    const typename E::Bits* raw = src + begin;
    load_floats<kDType>(raw, n, x);

    // Misses are rare: try the other neighbour, else store the value raw.
    const uint64_t all = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    uint64_t outliers = 0;  // bit i: value i is stored raw
    for (uint64_t m = ~first_candidates<kDType>(x, n, qz, q) & all; m != 0; m &= m - 1) {
      const int i = std::countr_zero(m);
      if (!eb::choose_quantum(x[i], qz, kDType, q[i])) outliers |= uint64_t{1} << i;
    }

    const eb::BlockSummary s = eb::summarize(q, outliers, static_cast<uint32_t>(n));
    const eb::BlockPlan plan = eb::plan_block(s, carry, kElem);
    p = eb::write_block_head(plan, s, outliers, reinterpret_cast<const uint8_t*>(raw), kElem, p);
    if (plan.verbatim) continue;
    eb::block_values(plan, s, carry, q, values);
    p = pack(values, n, plan.width, p);
    carry = s.last;
  }
  return p;
}

template <DType kDType>
void decode_blocks(std::span<const uint8_t> blocks, double step, TensorView out) {
  using E = Element<kDType>;
  constexpr uint32_t kElem = sizeof(typename E::Bits);
  auto* dst = static_cast<typename E::Bits*>(out.data);
  uint32_t values[kBlockValues];
  uint32_t carry = 0;
  size_t at = 0;
  for (size_t begin = 0; begin < out.count; begin += kBlockValues) {
    const auto n = static_cast<uint32_t>(std::min(kBlockValues, out.count - begin));
    eb::BlockLayout b;
    const eb::BlockError error =
        eb::parse_block(blocks.data() + at, blocks.size() - at, n, kElem, b);
    if (error != eb::BlockError::kNone) {
      corrupt(detail::concat(eb::describe(error), " (block ", begin / kBlockValues,
                             " at payload offset ", eb::kPreambleBytes + at, ")"));
    }
    const uint8_t* in = blocks.data() + at;
    at += b.bytes;
    typename E::Bits* block = dst + begin;
    if (b.verbatim) {
      std::memcpy(block, in + b.raw_at, n * kElem);
      continue;
    }
    unpack(in + b.packed_at, n, b.width, values);
    carry = eb::apply_base(b, n, carry, values);
    // Two simple loops (reconstruct, then round to the dtype) vectorize where one does not.
    float decoded[kBlockValues];
    for (size_t i = 0; i < n; ++i) {
      decoded[i] = eb::reconstruct(static_cast<int32_t>(values[i]), step);
    }
    if constexpr (kDType == DType::kBF16) {
      // f32_to_bf16 without its NaN case: q * step is never NaN.
      for (size_t i = 0; i < n; ++i) {
        const uint32_t u = f32_to_bits(decoded[i]);
        block[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      }
    } else {
      for (size_t i = 0; i < n; ++i) block[i] = E::from_float(decoded[i]);
    }
    const uint8_t* raw = in + b.raw_at;
    for (uint64_t m = b.outliers; m != 0; m &= m - 1) {
      std::memcpy(block + std::countr_zero(m), raw, kElem);
      raw += kElem;
    }
  }
  if (at != blocks.size()) {
    corrupt(detail::concat(blocks.size() - at, " trailing bytes after the last block"));
  }
}

// The shortest "%g"-style form that parses back to the same double ("0.0001", "1e-05"),
// independent of the C locale.
std::string shortest(double v) {
  char buffer[40];
  for (int precision = 1;; ++precision) {
    const auto written =
        std::to_chars(buffer, buffer + sizeof(buffer), v, std::chars_format::general, precision);
    double parsed = 0;
    std::from_chars(buffer, written.ptr, parsed);
    if (parsed == v || precision == 17) return std::string(buffer, written.ptr);
  }
}

class EbCodec final : public Codec {
 public:
  EbCodec(bool relative, double value) : relative_(relative), value_(value) {}

  CodecId id() const override { return CodecId::kEb; }
  std::string spec() const override {
    return (relative_ ? "eb:rel=" : "eb:abs=") + shortest(value_);
  }
  bool lossless() const override { return false; }
  CodecParams params() const override {
    CodecParams p;
    put_u8(p, kModeAt, relative_ ? 1 : 0);
    put_f64(p, kValueAt, value_);
    return p;
  }

  // Every block is at most its header byte plus its raw elements (else it would be verbatim).
  size_t max_payload_bytes(DType dtype, size_t count) const override {
    if (count == 0) return 0;
    const size_t blocks = (count + kBlockValues - 1) / kBlockValues;
    return eb::kPreambleBytes + blocks + count * dtype_size(dtype);
  }

  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions&) const override {
    if (in.count == 0) return 0;
    const double bound = resolve_bound(in);
    const eb::Quantizer qz = eb::make_quantizer(bound, bound > 0 ? 0.0f : eb::first_finite(in));
    std::memcpy(out.data(), &qz.bound, 8);
    std::memcpy(out.data() + 8, &qz.step, 8);
    uint8_t* const blocks = reinterpret_cast<uint8_t*>(out.data()) + eb::kPreambleBytes;
    uint8_t* end = nullptr;
    switch (in.dtype) {
      case DType::kF32:
        end = encode_blocks<DType::kF32>(in, qz, blocks);
        break;
      case DType::kBF16:
        end = encode_blocks<DType::kBF16>(in, qz, blocks);
        break;
      case DType::kF16:
        end = encode_blocks<DType::kF16>(in, qz, blocks);
        break;
    }
    return static_cast<size_t>(end - reinterpret_cast<uint8_t*>(out.data()));
  }

  void decode(std::span<const std::byte> payload, TensorView out) const override {
    if (out.count == 0) {
      if (!payload.empty()) corrupt("non-empty payload for 0 elements");
      return;
    }
    if (payload.size() < eb::kPreambleBytes) {
      corrupt(detail::concat("payload of ", payload.size(), " bytes ends inside the preamble"));
    }
    double bound, step;
    std::memcpy(&bound, payload.data(), 8);
    std::memcpy(&step, payload.data() + 8, 8);
    if (const char* error = eb::preamble_error(bound, step)) corrupt(error);
    const std::span<const uint8_t> blocks(
        reinterpret_cast<const uint8_t*>(payload.data()) + eb::kPreambleBytes,
        payload.size() - eb::kPreambleBytes);
    switch (out.dtype) {
      case DType::kF32:
        return decode_blocks<DType::kF32>(blocks, step, out);
      case DType::kBF16:
        return decode_blocks<DType::kBF16>(blocks, step, out);
      case DType::kF16:
        return decode_blocks<DType::kF16>(blocks, step, out);
    }
  }

 private:
  double resolve_bound(ConstTensorView in) const {
    if (!relative_) return value_;
    float lo = 0, hi = 0;
    bool any = false;
    switch (in.dtype) {
      case DType::kF32:
        any = finite_range<DType::kF32>(in, lo, hi);
        break;
      case DType::kBF16:
        any = finite_range<DType::kBF16>(in, lo, hi);
        break;
      case DType::kF16:
        any = finite_range<DType::kF16>(in, lo, hi);
        break;
    }
    return any ? eb::relative_bound(value_, lo, hi) : 0.0;
  }

  bool relative_;  // the bound is value_ * (max - min) of each tensor, else value_ itself
  double value_;   // the spec's X: a positive, normal, finite double
};

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  // Subnormal doubles are out: strtod flags them as underflow, so their spec would not parse.
  const double kMax = std::numeric_limits<double>::max();
  const double kMin = std::numeric_limits<double>::min();
  const std::optional<double> abs_value = args.get_optional_double("abs", kMin, kMax);
  const std::optional<double> rel_value = args.get_optional_double("rel", kMin, kMax);
  args.finish(kHelp);
  if (abs_value.has_value() == rel_value.has_value()) {
    throw InvalidArgument(tagged("codec", "spec '", args.spec(), "' needs exactly one of abs=X ",
                                 "or rel=X; eb accepts: ", kHelp));
  }
  return std::make_shared<EbCodec>(rel_value.has_value(),
                                   rel_value.value_or(abs_value.value_or(0)));
}

std::shared_ptr<const Codec> from_params(const CodecParams& params) {
  const uint8_t mode = get_u8(params, kModeAt);
  const double value = get_f64(params, kValueAt);
  for (size_t i = 0; i < params.bytes.size(); ++i) {
    if (i != kModeAt && (i < kValueAt || i >= kValueAt + 8) && params.bytes[i] != 0) {
      throw CorruptStream(tagged("codec:eb", "nonzero reserved parameter byte ", i));
    }
  }
  if (mode > 1) throw CorruptStream(tagged("codec:eb", "unknown bound mode ", int(mode)));
  if (!(value >= std::numeric_limits<double>::min()) || !std::isfinite(value)) {
    throw CorruptStream(tagged("codec:eb", "invalid bound ", value, " in the stream header"));
  }
  return std::make_shared<EbCodec>(mode == 1, value);
}

}  // namespace

const CodecEntry& eb_entry() {
  static const CodecEntry e{"eb", CodecId::kEb, kHelp, from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
