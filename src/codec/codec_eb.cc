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

uint32_t zigzag(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
int32_t unzigzag(uint32_t z) { return static_cast<int32_t>((z >> 1) ^ (0u - (z & 1u))); }
size_t varint_bytes(uint32_t v) {
  return 1 + (v >= (1u << 7)) + (v >= (1u << 14)) + (v >= (1u << 21)) + (v >= (1u << 28));
}
std::byte* put_varint(std::byte* p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<std::byte>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::byte>(v);
  return p;
}

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
void pack_full_block(const uint32_t* values, std::byte* out, std::index_sequence<I...>) {
  if constexpr (W > 0) {
    uint64_t words[W] = {};
    (pack_one<W, I>(values, words), ...);
    std::memcpy(out, words, 8 * W);
  }
}

template <unsigned W, size_t... I>
void unpack_full_block(const std::byte* in, uint32_t* values, std::index_sequence<I...>) {
  if constexpr (W == 0) {
    std::fill(values, values + kBlockValues, 0u);
  } else {
    uint64_t words[W];
    std::memcpy(words, in, 8 * W);
    (unpack_one<W, I>(words, values), ...);
  }
}

using PackFn = void (*)(const uint32_t*, std::byte*);
using UnpackFn = void (*)(const std::byte*, uint32_t*);

template <size_t... W>
constexpr std::array<PackFn, sizeof...(W)> pack_table(std::index_sequence<W...>) {
  return {[](const uint32_t* v, std::byte* out) {
    pack_full_block<W>(v, out, std::make_index_sequence<kBlockValues>());
  }...};
}

template <size_t... W>
constexpr std::array<UnpackFn, sizeof...(W)> unpack_table(std::index_sequence<W...>) {
  return {[](const std::byte* in, uint32_t* v) {
    unpack_full_block<W>(in, v, std::make_index_sequence<kBlockValues>());
  }...};
}

constexpr auto kPackFullBlock = pack_table(std::make_index_sequence<eb::kMaxWidth + 1>());
constexpr auto kUnpackFullBlock = unpack_table(std::make_index_sequence<eb::kMaxWidth + 1>());

// Packs n values of `width` bits (<= 32), least significant first; writes ceil(n * width / 8)
// bytes and returns the end.
std::byte* pack(const uint32_t* values, size_t n, unsigned width, std::byte* p) {
  if (n == kBlockValues) {
    kPackFullBlock[width](values, p);
    return p + 8 * width;
  }
  if (width == 0) return p;
  uint64_t acc = 0;
  unsigned filled = 0;
  for (size_t i = 0; i < n; ++i) {
    acc |= static_cast<uint64_t>(values[i]) << filled;
    filled += width;
    if (filled >= 64) {
      std::memcpy(p, &acc, 8);
      p += 8;
      filled -= 64;
      acc = filled == 0 ? 0 : static_cast<uint64_t>(values[i]) >> (width - filled);
    }
  }
  const unsigned tail = (filled + 7) / 8;
  std::memcpy(p, &acc, tail);
  return p + tail;
}

// Unpacks n values of `width` bits (<= 32) from `packed` (ceil(n * width / 8) readable bytes).
void unpack(const std::byte* packed, size_t n, unsigned width, uint32_t* values) {
  if (n == kBlockValues) return kUnpackFullBlock[width](packed, values);
  if (width == 0) {
    std::fill(values, values + n, 0u);
    return;
  }
  // A padded copy lets every value be read with one 8-byte load.
  std::byte buffer[kBlockValues * 4 + 8];
  const size_t bytes = (n * width + 7) / 8;
  std::memcpy(buffer, packed, bytes);
  std::memset(buffer + bytes, 0, 8);
  const uint64_t mask = (uint64_t{1} << width) - 1;
  for (size_t i = 0; i < n; ++i) {
    const size_t bit = i * width;
    uint64_t word;
    std::memcpy(&word, buffer + bit / 8, 8);
    values[i] = static_cast<uint32_t>((word >> (bit % 8)) & mask);
  }
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

// Encodes every block of `in` after the preamble; returns the end of the payload.
template <DType kDType>
std::byte* encode_blocks(ConstTensorView in, const eb::Quantizer& qz, std::byte* p) {
  using E = Element<kDType>;
  constexpr size_t kElem = sizeof(typename E::Bits);
  const auto* src = static_cast<const typename E::Bits*>(in.data);
  float x[kBlockValues];
  int32_t q[kBlockValues];
  uint32_t values[kBlockValues];
  int32_t carry = 0;  // last quantum of the previous coded block
  for (size_t begin = 0; begin < in.count; begin += kBlockValues) {
    const size_t n = std::min(kBlockValues, in.count - begin);
    const typename E::Bits* raw = src + begin;
    load_floats<kDType>(raw, n, x);

    // Misses are rare: try the other neighbour, else store the value raw; an outlier takes the
    // quantum of its predecessor so that it costs no width.
    const uint64_t all = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    uint64_t outliers = 0;  // bit i: value i is stored raw
    for (uint64_t m = ~first_candidates<kDType>(x, n, qz, q) & all; m != 0; m &= m - 1) {
      const int i = std::countr_zero(m);
      if (!eb::choose_quantum(x[i], qz, kDType, q[i])) {
        outliers |= uint64_t{1} << i;
        q[i] = i == 0 ? carry : q[i - 1];
      }
    }

    // |q| < 2^30, so offsets and deltas fit int32 and their ranges fit uint32.
    int32_t q_min = q[0], q_max = q[0];
    int32_t d_min = q[0] - carry, d_max = d_min;
    for (size_t i = 1; i < n; ++i) {
      const int32_t d = q[i] - q[i - 1];
      q_min = std::min(q_min, q[i]);
      q_max = std::max(q_max, q[i]);
      d_min = std::min(d_min, d);
      d_max = std::max(d_max, d);
    }
    const unsigned offset_width =
        eb::bit_width(static_cast<uint32_t>(q_max) - static_cast<uint32_t>(q_min));
    const unsigned delta_width =
        eb::bit_width(static_cast<uint32_t>(d_max) - static_cast<uint32_t>(d_min));
    const size_t offset_bytes = varint_bytes(zigzag(q_min)) + (n * offset_width + 7) / 8;
    const size_t delta_bytes = varint_bytes(zigzag(d_min)) + (n * delta_width + 7) / 8;
    const bool delta = delta_bytes < offset_bytes;
    const unsigned width = delta ? delta_width : offset_width;

    const size_t k = static_cast<size_t>(std::popcount(outliers));
    const size_t outlier_bytes = k == 0 ? 0 : 1 + eb::outlier_index_bytes(k, n) + k * kElem;
    const size_t coded_bytes = 1 + (delta ? delta_bytes : offset_bytes) + outlier_bytes;
    if (coded_bytes >= 1 + n * kElem) {
      *p++ = static_cast<std::byte>(eb::kVerbatimWidth);
      std::memcpy(p, raw, n * kElem);
      p += n * kElem;
      continue;
    }

    *p++ = static_cast<std::byte>(width | (delta ? eb::kDeltaFlag : 0) |
                                  (k != 0 ? eb::kOutlierFlag : 0));
    p = put_varint(p, zigzag(delta ? d_min : q_min));
    if (k != 0) {
      *p++ = static_cast<std::byte>(k);
      if (k < (n + 7) / 8) {
        for (uint64_t m = outliers; m != 0; m &= m - 1) {
          *p++ = static_cast<std::byte>(std::countr_zero(m));
        }
      } else {
        const size_t bitmap_bytes = (n + 7) / 8;
        std::memcpy(p, &outliers, bitmap_bytes);
        p += bitmap_bytes;
      }
      for (uint64_t m = outliers; m != 0; m &= m - 1) {
        std::memcpy(p, raw + std::countr_zero(m), kElem);
        p += kElem;
      }
    }
    if (delta) {
      values[0] = static_cast<uint32_t>(q[0] - carry) - static_cast<uint32_t>(d_min);
      for (size_t i = 1; i < n; ++i) {
        values[i] = static_cast<uint32_t>(q[i] - q[i - 1]) - static_cast<uint32_t>(d_min);
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        values[i] = static_cast<uint32_t>(q[i]) - static_cast<uint32_t>(q_min);
      }
    }
    p = pack(values, n, width, p);
    carry = q[n - 1];
  }
  return p;
}

// Bounds-checked cursor over a payload.
class PayloadReader {
 public:
  explicit PayloadReader(std::span<const std::byte> payload) : payload_(payload) {}

  const std::byte* take(size_t bytes, const char* what) {
    if (bytes > payload_.size() - at_) {
      corrupt(detail::concat("payload ends inside ", what, " (", bytes, " bytes at offset ", at_,
                             " of ", payload_.size(), ")"));
    }
    const std::byte* p = payload_.data() + at_;
    at_ += bytes;
    return p;
  }
  uint8_t u8(const char* what) { return static_cast<uint8_t>(*take(1, what)); }
  double f64(const char* what) {
    double v;
    std::memcpy(&v, take(8, what), 8);
    return v;
  }
  uint32_t varint() {
    uint64_t v = 0;
    for (size_t i = 0; i < eb::kMaxVarintBytes; ++i) {
      const uint8_t b = u8("a block base");
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        if (i > 0 && b == 0) corrupt("overlong block base");
        if (v > 0xffffffffu) corrupt("block base out of range");
        return static_cast<uint32_t>(v);
      }
    }
    corrupt("block base longer than 5 bytes");
  }
  size_t remaining() const { return payload_.size() - at_; }

 private:
  std::span<const std::byte> payload_;
  size_t at_ = 0;
};

// Reads the outlier section of a block of n values; returns the outlier mask and points `raw` at
// their elements.
uint64_t read_outliers(PayloadReader& r, size_t n, size_t elem, const std::byte*& raw) {
  const size_t k = r.u8("an outlier count");
  if (k == 0 || k > n) corrupt(detail::concat("outlier count ", k, " in a block of ", n));
  uint64_t mask = 0;
  if (k < (n + 7) / 8) {
    const std::byte* positions = r.take(k, "outlier positions");
    int last = -1;
    for (size_t j = 0; j < k; ++j) {
      const int at = static_cast<int>(positions[j]);
      if (at <= last || at >= static_cast<int>(n)) {
        corrupt(detail::concat("outlier position ", at, " after ", last, " in a block of ", n));
      }
      mask |= uint64_t{1} << at;
      last = at;
    }
  } else {
    const size_t bitmap_bytes = (n + 7) / 8;
    std::memcpy(&mask, r.take(bitmap_bytes, "an outlier bitmap"), bitmap_bytes);
    if (n < 64 && (mask >> n) != 0) corrupt("outlier bitmap marks a value past the block");
    if (static_cast<size_t>(std::popcount(mask)) != k) {
      corrupt(
          detail::concat("outlier bitmap marks ", std::popcount(mask), " values, count says ", k));
    }
  }
  raw = r.take(k * elem, "outlier values");
  return mask;
}

template <DType kDType>
void decode_blocks(PayloadReader& r, double step, TensorView out) {
  using E = Element<kDType>;
  constexpr size_t kElem = sizeof(typename E::Bits);
  auto* dst = static_cast<typename E::Bits*>(out.data);
  uint32_t values[kBlockValues];
  uint32_t carry = 0;
  for (size_t begin = 0; begin < out.count; begin += kBlockValues) {
    const size_t n = std::min(kBlockValues, out.count - begin);
    const uint8_t header = r.u8("a block header");
    const unsigned width = header & eb::kWidthMask;
    if (width == eb::kVerbatimWidth) {
      if (header != eb::kVerbatimWidth) corrupt("flags on a verbatim block");
      std::memcpy(dst + begin, r.take(n * kElem, "a verbatim block"), n * kElem);
      continue;
    }
    if (width > eb::kMaxWidth) {
      corrupt(
          detail::concat("bit width ", width, " in block ", begin / kBlockValues, " exceeds 32"));
    }
    const uint32_t base = static_cast<uint32_t>(unzigzag(r.varint()));
    uint64_t outliers = 0;
    const std::byte* raw = nullptr;
    if (header & eb::kOutlierFlag) outliers = read_outliers(r, n, kElem, raw);
    const size_t packed_bytes = (n * width + 7) / 8;
    const std::byte* packed = r.take(packed_bytes, "packed values");
    const unsigned used_bits = static_cast<unsigned>(n * width % 8);
    if (used_bits != 0 && (static_cast<uint8_t>(packed[packed_bytes - 1]) >> used_bits) != 0) {
      corrupt("nonzero padding bits after packed values");
    }
    unpack(packed, n, width, values);

    // Quanta modulo 2^32: a valid stream never wraps, garbage may and stays harmless.
    if (header & eb::kDeltaFlag) {
      for (size_t i = 0; i < n; ++i) {
        carry += base + values[i];
        values[i] = carry;
      }
    } else {
      for (size_t i = 0; i < n; ++i) values[i] += base;
      carry = values[n - 1];
    }
    typename E::Bits* block = dst + begin;
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
    for (uint64_t m = outliers; m != 0; m &= m - 1) {
      std::memcpy(block + std::countr_zero(m), raw, kElem);
      raw += kElem;
    }
  }
  if (r.remaining() != 0) {
    corrupt(detail::concat(r.remaining(), " trailing bytes after the last block"));
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
    std::byte* const blocks = out.data() + eb::kPreambleBytes;
    std::byte* end = nullptr;
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
    return static_cast<size_t>(end - out.data());
  }

  void decode(std::span<const std::byte> payload, TensorView out) const override {
    PayloadReader r(payload);
    if (out.count == 0) {
      if (!payload.empty()) corrupt("non-empty payload for 0 elements");
      return;
    }
    const double bound = r.f64("the preamble");
    const double step = r.f64("the preamble");
    if (const char* error = eb::preamble_error(bound, step)) corrupt(error);
    switch (out.dtype) {
      case DType::kF32:
        return decode_blocks<DType::kF32>(r, step, out);
      case DType::kBF16:
        return decode_blocks<DType::kBF16>(r, step, out);
      case DType::kF16:
        return decode_blocks<DType::kF16>(r, step, out);
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
