// Per-block logic of codec "eb" (payload layout at the top of src/codec/codec_eb.cc), shared by
// the CPU codec and the CUDA kernels: the quantizer and the bound check, the summary of a block's
// quanta that does not depend on the carry (the last quantum of the previous coded block), the
// plan of a block for a given carry (mode, width, base, verbatim or not, size), the writing of a
// block, and the parsing, unpacking and decoding of one. The CPU codec loops over the blocks in
// order; the device computes every summary in parallel, resolves the carries, then writes every
// block at its offset (codec/block/eb_stages.h).
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "codec/block/bit_ops.h"
#include "codec/float_convert.h"
#include "common/host_device.h"
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
HYCC_HD inline size_t outlier_index_bytes(size_t k, size_t n) {
  return k < (n + 7) / 8 ? k : (n + 7) / 8;
}

// Number of bits needed to hold values in [0, range].
HYCC_HD inline unsigned bit_width(uint32_t range) { return bit_width32(range); }

// The quantizer of one tensor: q = round(x / step), reconstruction q * step.
struct Quantizer {
  double bound = 0;     // |x - decoded| <= bound for every finite x (absolute, resolved)
  double step = 1;      // quantization step: 2 * bound, capped, or a stand-in when bound is 0
  double inv_step = 1;  // 1 / step: the encoder multiplies (its choice of q is checked anyway)
};

// The step for a resolved bound. When the bound is 0 (rel on a constant tensor) only exact
// reconstructions are acceptable: the step is then |first finite value| (so a constant tensor
// quantizes to q = +-1 exactly), or 1 if that is 0 or there is none.
HYCC_HD inline Quantizer make_quantizer(double bound, float first_finite) {
  Quantizer qz;
  qz.bound = bound;
  if (bound > 0) {
    qz.step = fmin(2 * bound, kMaxStep);
  } else {
    const double c = fabs(static_cast<double>(first_finite));
    qz.step = c > 0 ? c : 1.0;
  }
  qz.inv_step = 1.0 / qz.step;
  return qz;
}

// Candidate quantum of x; false if x is not finite or |x / step| exceeds kMaxQuantum.
HYCC_HD inline bool quantize(float x, double inv_step, int32_t& q) {
  const double y = static_cast<double>(x) * inv_step;
  const bool in_range = fabs(y) <= kMaxQuantum;  // false for NaN and infinities
  const double rounded = in_range ? (y + kRoundMagic) - kRoundMagic : 0.0;
  q = static_cast<int32_t>(rounded);
  return in_range;
}

// The value the decoder produces for q before rounding to the output dtype. One double multiply,
// one rounding to float: both sides compute exactly this.
HYCC_HD inline float reconstruct(int32_t q, double step) {
  return static_cast<float>(static_cast<double>(q) * step);
}

// Rounds a float to the dtype (nearest even) and widens it back, as storing and loading does.
template <DType kDType>
HYCC_HD inline float round_to_dtype(float v) {
  if constexpr (kDType == DType::kBF16) return bf16_to_f32(f32_to_bf16(v));
  if constexpr (kDType == DType::kF16) return f16_to_f32(f32_to_f16(v));
  return v;
}

HYCC_HD inline float round_to_dtype(float v, DType dtype) {
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
HYCC_HD inline bool within_bound(float x, float decoded, double bound) {
  return fabs(static_cast<double>(x) - static_cast<double>(decoded)) <= bound;
}

// Chooses the quantum of x: the rounded quotient if its decoded value (in the output dtype) is
// within the bound, else its neighbour on the other side of x, else none (x is an outlier).
// Rounding q * step to float, or to a 16-bit dtype, can push the first candidate past the bound.
HYCC_HD inline bool choose_quantum(float x, const Quantizer& qz, DType dtype, int32_t& q) {
  if (!quantize(x, qz.inv_step, q)) return false;
  if (within_bound(x, round_to_dtype(reconstruct(q, qz.step), dtype), qz.bound)) return true;
  const int32_t other = static_cast<double>(x) > static_cast<double>(q) * qz.step ? q + 1 : q - 1;
  if (fabs(static_cast<double>(other)) > kMaxQuantum) return false;
  if (!within_bound(x, round_to_dtype(reconstruct(other, qz.step), dtype), qz.bound)) return false;
  q = other;
  return true;
}

HYCC_HD inline uint32_t zigzag(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
HYCC_HD inline int32_t unzigzag(uint32_t z) {
  return static_cast<int32_t>((z >> 1) ^ (0u - (z & 1u)));
}
HYCC_HD inline size_t varint_bytes(uint32_t v) {
  return 1 + (v >= (1u << 7)) + (v >= (1u << 14)) + (v >= (1u << 21)) + (v >= (1u << 28));
}
HYCC_HD inline uint8_t* put_varint(uint8_t* p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// ---- Encoding -------------------------------------------------------------------------------

// What a block's quanta say independently of the carry. Outliers take the quantum of their
// predecessor; the leading ones (before the first coded value) take the carry, which only the
// plan knows.
struct BlockSummary {
  uint32_t n = 0;     // values
  uint32_t k = 0;     // outliers
  uint32_t lead = 0;  // leading outliers: position of the first coded value (n: none)
  int32_t first = 0;  // q of the first coded value
  int32_t last = 0;   // q of the last value: the next block's carry if this one is coded
  int32_t q_min = 0;  // range of q over positions >= lead
  int32_t q_max = 0;
  int32_t d_min = 0;  // range of q_i - q_{i-1} over positions > lead, with 0 if lead > 0
                      // (empty, d_min > d_max, for a single value)
  int32_t d_max = 0;
};

// Summarizes the quanta q[0, n) of a block (|q| < 2^30 where coded) and its outlier mask; gives
// the non-leading outliers the quantum of their predecessor, in q (and the leading ones, for
// now, the first coded quantum).
HYCC_HD inline BlockSummary summarize(int32_t* q, uint64_t outliers, uint32_t n) {
  BlockSummary s;
  s.n = n;
  s.k = popcount64(outliers);
  const uint64_t all = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  const uint64_t coded = ~outliers & all;
  s.lead = coded == 0 ? n : countr_zero64(coded);
  if (s.lead == n) return s;
  for (uint64_t m = outliers >> s.lead; m != 0; m &= m - 1) {
    const uint32_t i = s.lead + countr_zero64(m);
    q[i] = q[i - 1];
  }
  // The leading outliers take the first coded quantum for now (block_values() gives them the
  // carry): the ranges below then start at position 0, a loop that vectorizes, and the zero
  // deltas this adds are in every plan with leading outliers anyway. Locals, not the fields of
  // s: the compiler cannot tell that s (the caller's return slot) does not alias q.
  for (size_t i = 0; i < s.lead; ++i) q[i] = q[s.lead];
  int32_t q_min = q[0], q_max = q[0], d_min = INT32_MAX, d_max = INT32_MIN;
  for (size_t i = 1; i < n; ++i) {
    const int32_t d = q[i] - q[i - 1];
    q_min = q[i] < q_min ? q[i] : q_min;
    q_max = q[i] > q_max ? q[i] : q_max;
    d_min = d < d_min ? d : d_min;
    d_max = d > d_max ? d : d_max;
  }
  s.first = q[s.lead];
  s.last = q[n - 1];
  s.q_min = q_min;
  s.q_max = q_max;
  s.d_min = d_min;
  s.d_max = d_max;
  return s;
}

// How a block is written after a given carry.
struct BlockPlan {
  bool verbatim = false;
  bool delta = false;
  unsigned width = 0;
  int32_t base = 0;    // min q (offset mode) or min delta (delta mode)
  uint32_t bytes = 0;  // the whole block, header included
};

// The plan of a block after `carry`: the narrower of offsets and deltas, or verbatim if coding
// would not be smaller than the raw elements (always so when every value is an outlier).
HYCC_HD inline BlockPlan plan_block(const BlockSummary& s, int32_t carry, uint32_t elem_bytes) {
  BlockPlan p;
  const uint32_t raw_bytes = 1 + s.n * elem_bytes;
  if (s.lead == s.n) {
    p.verbatim = true;
    p.width = kVerbatimWidth;
    p.bytes = raw_bytes;
    return p;
  }
  int32_t q_min = s.q_min, q_max = s.q_max, d_min = s.d_min, d_max = s.d_max;
  if (s.lead > 0) {  // leading outliers carry `carry`: q = carry, deltas 0
    q_min = carry < q_min ? carry : q_min;
    q_max = carry > q_max ? carry : q_max;
    d_min = 0 < d_min ? 0 : d_min;
    d_max = 0 > d_max ? 0 : d_max;
  }
  const int32_t d_first = s.first - carry;
  d_min = d_first < d_min ? d_first : d_min;
  d_max = d_first > d_max ? d_first : d_max;
  const unsigned offset_width =
      bit_width(static_cast<uint32_t>(q_max) - static_cast<uint32_t>(q_min));
  const unsigned delta_width =
      bit_width(static_cast<uint32_t>(d_max) - static_cast<uint32_t>(d_min));
  const size_t offset_bytes = varint_bytes(zigzag(q_min)) + (s.n * offset_width + 7) / 8;
  const size_t delta_bytes = varint_bytes(zigzag(d_min)) + (s.n * delta_width + 7) / 8;
  p.delta = delta_bytes < offset_bytes;
  p.width = p.delta ? delta_width : offset_width;
  p.base = p.delta ? d_min : q_min;
  const size_t outlier_bytes = s.k == 0 ? 0 : 1 + outlier_index_bytes(s.k, s.n) + s.k * elem_bytes;
  const size_t coded_bytes = 1 + (p.delta ? delta_bytes : offset_bytes) + outlier_bytes;
  if (coded_bytes >= raw_bytes) {
    p = BlockPlan{};
    p.verbatim = true;
    p.width = kVerbatimWidth;
    p.bytes = raw_bytes;
    return p;
  }
  p.bytes = static_cast<uint32_t>(coded_bytes);
  return p;
}

// Whether a block is coded whatever the carry: no leading outliers (its offsets do not depend
// on the carry) and offset coding alone beats the raw elements. Such a block's carry-out is its
// own last quantum, which lets the device resolve the carries of the blocks after it in parallel.
HYCC_HD inline bool coded_for_any_carry(const BlockSummary& s, uint32_t elem_bytes) {
  if (s.lead != 0) return false;
  const unsigned offset_width =
      bit_width(static_cast<uint32_t>(s.q_max) - static_cast<uint32_t>(s.q_min));
  const size_t offset_bytes = varint_bytes(zigzag(s.q_min)) + (s.n * offset_width + 7) / 8;
  const size_t outlier_bytes = s.k == 0 ? 0 : 1 + outlier_index_bytes(s.k, s.n) + s.k * elem_bytes;
  return 1 + offset_bytes + outlier_bytes < 1 + s.n * elem_bytes;
}

// The values to pack for a coded block: q - base (offset mode) or q_i - q_{i-1} - base (delta
// mode, q_{-1} = carry). Gives the leading outliers the carry, in q.
HYCC_HD inline void block_values(const BlockPlan& p, const BlockSummary& s, int32_t carry,
                                 int32_t* q, uint32_t* values) {
  for (size_t i = 0; i < s.lead; ++i) q[i] = carry;
  const uint32_t base = static_cast<uint32_t>(p.base);
  if (p.delta) {
    values[0] = static_cast<uint32_t>(q[0] - carry) - base;
    for (size_t i = 1; i < s.n; ++i) values[i] = static_cast<uint32_t>(q[i] - q[i - 1]) - base;
  } else {
    for (size_t i = 0; i < s.n; ++i) values[i] = static_cast<uint32_t>(q[i]) - base;
  }
}

// Writes the head of a block: the header byte, the base and the outlier section (positions and
// raw elements from `raw`, the block's n elements of elem_bytes each); a verbatim block is
// written whole. Returns where the packed values go (the end, for a verbatim block).
HYCC_HD inline uint8_t* write_block_head(const BlockPlan& p, const BlockSummary& s,
                                         uint64_t outliers, const uint8_t* raw, uint32_t elem_bytes,
                                         uint8_t* out) {
  if (p.verbatim) {
    *out++ = static_cast<uint8_t>(kVerbatimWidth);
    std::memcpy(out, raw, s.n * elem_bytes);
    return out + s.n * elem_bytes;
  }
  *out++ =
      static_cast<uint8_t>(p.width | (p.delta ? kDeltaFlag : 0) | (s.k != 0 ? kOutlierFlag : 0));
  out = put_varint(out, zigzag(p.base));
  if (s.k != 0) {
    *out++ = static_cast<uint8_t>(s.k);
    if (s.k < (s.n + 7) / 8) {
      for (uint64_t m = outliers; m != 0; m &= m - 1) {
        *out++ = static_cast<uint8_t>(countr_zero64(m));
      }
    } else {
      for (uint32_t b = 0; b < (s.n + 7) / 8; ++b)
        *out++ = static_cast<uint8_t>(outliers >> (8 * b));
    }
    for (uint64_t m = outliers; m != 0; m &= m - 1) {
      std::memcpy(out, raw + countr_zero64(m) * elem_bytes, elem_bytes);
      out += elem_bytes;
    }
  }
  return out;
}

// Packs n values of `width` bits (<= 32), least significant bit first: writes
// ceil(n * width / 8) bytes, the padding bits zero, and returns the end.
HYCC_HD inline uint8_t* pack_values(const uint32_t* values, uint32_t n, unsigned width,
                                    uint8_t* out) {
  if (width == 0) return out;
  uint64_t acc = 0;
  unsigned filled = 0;
  for (uint32_t i = 0; i < n; ++i) {
    acc |= static_cast<uint64_t>(values[i]) << filled;
    filled += width;
    while (filled >= 8) {
      *out++ = static_cast<uint8_t>(acc);
      acc >>= 8;
      filled -= 8;
    }
  }
  if (filled != 0) *out++ = static_cast<uint8_t>(acc);
  return out;
}

// The whole block after `carry` at `out` (p.bytes bytes); q is updated as block_values() says.
HYCC_HD inline uint8_t* write_block(const BlockPlan& p, const BlockSummary& s, int32_t carry,
                                    int32_t* q, uint64_t outliers, const uint8_t* raw,
                                    uint32_t elem_bytes, uint8_t* out) {
  out = write_block_head(p, s, outliers, raw, elem_bytes, out);
  if (p.verbatim) return out;
  uint32_t values[kBlockValues];
  block_values(p, s, carry, q, values);
  return pack_values(values, s.n, p.width, out);
}

// ---- Decoding -------------------------------------------------------------------------------

enum class BlockError : uint8_t {
  kNone,
  kTruncated,        // the payload ends inside the block
  kVerbatimFlags,    // a verbatim header with mode or outlier bits
  kWidth,            // a bit width above 32
  kOverlongBase,     // a base with a redundant trailing zero byte
  kBaseRange,        // a base above 2^32 - 1
  kLongBase,         // a base longer than 5 bytes
  kOutlierCount,     // 0 outliers, or more than the block's values
  kOutlierPosition,  // positions not increasing, or past the block
  kBitmapPastBlock,  // an outlier bitmap marking a value past the block
  kBitmapCount,      // an outlier bitmap disagreeing with the count
  kPadding,          // non-zero padding bits after the packed values
};

inline const char* describe(BlockError e) {
  switch (e) {
    case BlockError::kNone:
      return "no error";
    case BlockError::kTruncated:
      return "payload ends inside a block";
    case BlockError::kVerbatimFlags:
      return "flags on a verbatim block";
    case BlockError::kWidth:
      return "bit width exceeds 32";
    case BlockError::kOverlongBase:
      return "overlong block base";
    case BlockError::kBaseRange:
      return "block base out of range";
    case BlockError::kLongBase:
      return "block base longer than 5 bytes";
    case BlockError::kOutlierCount:
      return "outlier count is 0 or exceeds the block";
    case BlockError::kOutlierPosition:
      return "outlier positions not increasing within the block";
    case BlockError::kBitmapPastBlock:
      return "outlier bitmap marks a value past the block";
    case BlockError::kBitmapCount:
      return "outlier bitmap disagrees with the outlier count";
    case BlockError::kPadding:
      return "nonzero padding bits after packed values";
  }
  return "unknown error";
}

// Where the pieces of one encoded block lie, relative to its first byte.
struct BlockLayout {
  bool verbatim = false;
  bool delta = false;
  unsigned width = 0;
  uint32_t base = 0;      // unzigzagged, as uint32 (arithmetic modulo 2^32)
  uint64_t outliers = 0;  // bit i: value i is raw
  uint32_t raw_at = 0;    // the raw elements: outliers in position order, or the verbatim block
  uint32_t packed_at = 0;
  uint32_t bytes = 0;  // the whole block
};

// The longest block parse_block accepts, for elements of elem_bytes: header, base, outlier
// count, outlier bitmap, every value raw and every value packed at kMaxWidth bits.
HYCC_HD inline constexpr uint32_t max_block_bytes(uint32_t elem_bytes) {
  constexpr auto kValues = static_cast<uint32_t>(kBlockValues);
  return 1 + static_cast<uint32_t>(kMaxVarintBytes) + 1 + (kValues + 7) / 8 + kValues * elem_bytes +
         kValues * kMaxWidth / 8;
}

// Parses and checks the block of n values at `in` with `available` bytes left in the payload.
HYCC_HD inline BlockError parse_block(const uint8_t* in, size_t available, uint32_t n,
                                      uint32_t elem_bytes, BlockLayout& b) {
  b = BlockLayout{};
  size_t at = 0;
  if (available < 1) return BlockError::kTruncated;
  const uint8_t header = in[at++];
  b.width = header & kWidthMask;
  if (b.width == kVerbatimWidth) {
    if (header != kVerbatimWidth) return BlockError::kVerbatimFlags;
    if (available - at < size_t{n} * elem_bytes) return BlockError::kTruncated;
    b.verbatim = true;
    b.raw_at = static_cast<uint32_t>(at);
    b.bytes = static_cast<uint32_t>(at + size_t{n} * elem_bytes);
    return BlockError::kNone;
  }
  if (b.width > kMaxWidth) return BlockError::kWidth;
  b.delta = (header & kDeltaFlag) != 0;
  uint64_t v = 0;
  for (size_t i = 0;; ++i) {
    if (i == kMaxVarintBytes) return BlockError::kLongBase;
    if (at >= available) return BlockError::kTruncated;
    const uint8_t byte = in[at++];
    v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      if (i > 0 && byte == 0) return BlockError::kOverlongBase;
      if (v > 0xffffffffu) return BlockError::kBaseRange;
      break;
    }
  }
  b.base = static_cast<uint32_t>(unzigzag(static_cast<uint32_t>(v)));
  if (header & kOutlierFlag) {
    if (at >= available) return BlockError::kTruncated;
    const uint32_t k = in[at++];
    if (k == 0 || k > n) return BlockError::kOutlierCount;
    const uint32_t bitmap_bytes = (n + 7) / 8;
    if (k < bitmap_bytes) {
      if (available - at < k) return BlockError::kTruncated;
      int last = -1;
      for (uint32_t j = 0; j < k; ++j) {
        const int pos = in[at++];
        if (pos <= last || pos >= static_cast<int>(n)) return BlockError::kOutlierPosition;
        b.outliers |= uint64_t{1} << pos;
        last = pos;
      }
    } else {
      if (available - at < bitmap_bytes) return BlockError::kTruncated;
      for (uint32_t j = 0; j < bitmap_bytes; ++j) {
        b.outliers |= static_cast<uint64_t>(in[at++]) << (8 * j);
      }
      if (n < 64 && (b.outliers >> n) != 0) return BlockError::kBitmapPastBlock;
      if (popcount64(b.outliers) != k) return BlockError::kBitmapCount;
    }
    if (available - at < size_t{k} * elem_bytes) return BlockError::kTruncated;
    b.raw_at = static_cast<uint32_t>(at);
    at += size_t{k} * elem_bytes;
  }
  const size_t packed_bytes = (size_t{n} * b.width + 7) / 8;
  if (available - at < packed_bytes) return BlockError::kTruncated;
  b.packed_at = static_cast<uint32_t>(at);
  const unsigned used_bits = static_cast<unsigned>(size_t{n} * b.width % 8);
  if (used_bits != 0 && (in[at + packed_bytes - 1] >> used_bits) != 0) return BlockError::kPadding;
  b.bytes = static_cast<uint32_t>(at + packed_bytes);
  return BlockError::kNone;
}

// Unpacks n values of `width` bits (<= 32) from ceil(n * width / 8) bytes, least significant
// bit first; reads no byte past them.
HYCC_HD inline void unpack_values(const uint8_t* packed, uint32_t n, unsigned width,
                                  uint32_t* values) {
  if (width == 0) {
    for (uint32_t i = 0; i < n; ++i) values[i] = 0;
    return;
  }
  const uint64_t mask = (uint64_t{1} << width) - 1;
  uint64_t acc = 0;
  unsigned filled = 0;
  for (uint32_t i = 0; i < n; ++i) {
    while (filled < width) {
      acc |= static_cast<uint64_t>(*packed++) << filled;
      filled += 8;
    }
    values[i] = static_cast<uint32_t>(acc & mask);
    acc >>= width;
    filled -= width;
  }
}

// Turns unpacked values into quanta (modulo 2^32: a valid stream never wraps, garbage may and
// stays harmless) after `carry`; returns the carry-out (the last quantum).
HYCC_HD inline uint32_t apply_base(const BlockLayout& b, uint32_t n, uint32_t carry,
                                   uint32_t* values) {
  if (b.delta) {
    for (size_t i = 0; i < n; ++i) {
      carry += b.base + values[i];
      values[i] = carry;
    }
    return carry;
  }
  for (size_t i = 0; i < n; ++i) values[i] += b.base;
  return values[n - 1];
}

// What a block does to the carry: a verbatim block passes it on, an offset-mode block sets it
// to its last quantum, a delta-mode block adds the sum of its deltas. Composing these is
// associative, so the device finds every block's carry with one exclusive scan.
struct CarryEffect {
  uint32_t value = 0;
  uint32_t sets = 1;  // 1: carry-out = value; 0: carry-out = carry-in + value

  HYCC_HD static CarryEffect of(const BlockLayout& b, uint32_t n, const uint32_t* values) {
    CarryEffect e;
    if (b.verbatim) {
      e.sets = 0;
      return e;
    }
    if (!b.delta) {
      e.value = values[n - 1] + b.base;
      return e;
    }
    e.sets = 0;
    for (uint32_t i = 0; i < n; ++i) e.value += b.base + values[i];
    return e;
  }
  // `earlier` followed by `later`.
  HYCC_HD static CarryEffect then(const CarryEffect& earlier, const CarryEffect& later) {
    if (later.sets) return later;
    CarryEffect e;
    e.value = earlier.value + later.value;
    e.sets = earlier.sets;
    return e;
  }
};

}  // namespace hycc::codec::eb
