// zfp fixed-rate coding of one 1-D block of 4 floats, shared by the CPU codec and the CUDA
// kernels: the same steps, in the same integer and float arithmetic, as libzfp 1.0's
// zfp_encode_block_float_1 / zfp_decode_block_float_1 with zfp_stream_set_rate(R, zfp_type_float,
// 1, zfp_false) (minbits = maxbits = B = max(round(4 R), 9), maxprec 64, minexp -1074):
//   1. block-floating-point: emax = exponent of the largest |x| (frexp, clamped to -126; -127
//      for an all-zero block, which is coded as a single 0 bit), then i = (int32)(x * 2^(30-emax))
//      with float arithmetic, so a scale 2^(30-emax) beyond float's range is infinite as in zfp
//      (and the conversion of an out-of-range product gives INT32_MIN, as x86's cvttss2si does:
//      blocks whose largest magnitude is below 2^-97 come out as libzfp writes them on x86);
//   2. the decorrelating lifting transform (fwd_lift), in wrapping 32-bit arithmetic;
//   3. negabinary: u = (i + 0xaaaaaaaa) ^ 0xaaaaaaaa;
//   4. embedded coding of the 32 bit planes from the top, each as its first n bits verbatim
//      (n = values known to be significant) then unary group tests, until B bits are used.
// A block takes exactly B bits (zero padded), so block b starts at bit b * B of the stream; bits
// are numbered from the least significant bit of the first byte (zfp's order with byte words).
// Decoding reverses the steps: x = float(i) * 2^(emax-30), float arithmetic (0 where 2^(emax-30)
// underflows, as in zfp). Inputs must be finite: the codec replaces NaN and infinities first.
#pragma once

#include <cstdint>

#include "codec/block/bit_ops.h"
#include "codec/float_convert.h"
#include "common/host_device.h"

namespace hycc::codec::zfp {

inline constexpr uint32_t kBlockValues = 4;
inline constexpr uint32_t kMinBlockBits = 1 + 8;  // zero flag and exponent: zfp's floor for floats
inline constexpr uint32_t kMaxBlockBits = 128;    // rate 32
inline constexpr uint32_t kNegabinaryMask = 0xaaaaaaaau;

// The bits of one block, least significant bit of lo first (at most 128).
struct BlockBits {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

// Appends bits to a BlockBits; the caller never writes past bit 128.
class BlockBitWriter {
 public:
  HYCC_HD explicit BlockBitWriter(BlockBits& bits) : bits_(bits) {}
  // Writes the low n (<= 64) bits of value.
  HYCC_HD void put(uint64_t value, uint32_t n) {
    if (n == 0) return;
    if (n < 64) value &= (uint64_t{1} << n) - 1;
    if (pos_ < 64) {
      bits_.lo |= value << pos_;
      if (pos_ + n > 64) bits_.hi |= value >> (64 - pos_);
    } else {
      bits_.hi |= value << (pos_ - 64);
    }
    pos_ += n;
  }
  HYCC_HD uint32_t position() const { return pos_; }

 private:
  BlockBits& bits_;
  uint32_t pos_ = 0;
};

// Reads bits from a BlockBits; reading past bit 128 gives zeros.
class BlockBitReader {
 public:
  HYCC_HD explicit BlockBitReader(const BlockBits& bits) : bits_(bits) {}
  // Reads n (<= 32) bits.
  HYCC_HD uint32_t take(uint32_t n) {
    const uint32_t v = peek(n);
    pos_ += n;
    return v;
  }
  // The next n (<= 32) bits, without reading them.
  HYCC_HD uint32_t peek(uint32_t n) const {
    if (n == 0) return 0;
    uint64_t v;
    if (pos_ < 64) {
      v = bits_.lo >> pos_;
      if (pos_ + n > 64) v |= bits_.hi << (64 - pos_);
    } else {
      v = pos_ < 128 ? bits_.hi >> (pos_ - 64) : 0;
    }
    return static_cast<uint32_t>(v & ((uint64_t{1} << n) - 1));
  }
  HYCC_HD void skip(uint32_t n) { pos_ += n; }

 private:
  const BlockBits& bits_;
  uint32_t pos_ = 0;
};

// zfp_stream_set_rate's bits per block of 4 floats for a rate of R bits per value (1-D, unaligned).
inline uint32_t rate_block_bits(double rate) {
  const double bits = 4 * rate + 0.5;
  const auto b = static_cast<uint32_t>(bits < 0 ? 0 : bits);
  return b < kMinBlockBits ? kMinBlockBits : b;
}

// frexp's exponent of the largest magnitude, clamped to -126; -127 if every value is zero.
HYCC_HD inline int block_exponent(const float* x) {
  uint32_t max_abs = 0;
  for (uint32_t i = 0; i < kBlockValues; ++i) {
    const uint32_t a = f32_to_bits(x[i]) & 0x7fffffffu;
    max_abs = a > max_abs ? a : max_abs;
  }
  if (max_abs == 0) return -127;
  const int biased = static_cast<int>(max_abs >> 23);
  return biased == 0 ? -126 : biased - 126;
}

// 2^e as a float, with float's overflow (infinity) and underflow (denormals, then 0): ldexpf(1, e).
HYCC_HD inline float power_of_two(int e) {
  if (e > 127) return bits_to_f32(0x7f800000u);
  if (e >= -126) return bits_to_f32(static_cast<uint32_t>(e + 127) << 23);
  if (e >= -149) return bits_to_f32(uint32_t{1} << (e + 149));
  return 0.0f;
}

// (int32_t)v as x86's cvttss2si computes it: truncation, INT32_MIN for NaN and out of range.
HYCC_HD inline int32_t truncate_like_x86(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

HYCC_HD inline int32_t shift_right(uint32_t v) { return static_cast<int32_t>(v) >> 1; }

// zfp's forward lifting transform of a 4-vector, in wrapping 32-bit arithmetic.
HYCC_HD inline void forward_lift(int32_t* p) {
  auto x = static_cast<uint32_t>(p[0]), y = static_cast<uint32_t>(p[1]);
  auto z = static_cast<uint32_t>(p[2]), w = static_cast<uint32_t>(p[3]);
  x += w;
  x = static_cast<uint32_t>(shift_right(x));
  w -= x;
  z += y;
  z = static_cast<uint32_t>(shift_right(z));
  y -= z;
  x += z;
  x = static_cast<uint32_t>(shift_right(x));
  z -= x;
  w += y;
  w = static_cast<uint32_t>(shift_right(w));
  y -= w;
  w += static_cast<uint32_t>(shift_right(y));
  y -= static_cast<uint32_t>(shift_right(w));
  p[0] = static_cast<int32_t>(x);
  p[1] = static_cast<int32_t>(y);
  p[2] = static_cast<int32_t>(z);
  p[3] = static_cast<int32_t>(w);
}

// zfp's inverse lifting transform of a 4-vector, in wrapping 32-bit arithmetic.
HYCC_HD inline void inverse_lift(int32_t* p) {
  auto x = static_cast<uint32_t>(p[0]), y = static_cast<uint32_t>(p[1]);
  auto z = static_cast<uint32_t>(p[2]), w = static_cast<uint32_t>(p[3]);
  y += static_cast<uint32_t>(shift_right(w));
  w -= static_cast<uint32_t>(shift_right(y));
  y += w;
  w <<= 1;
  w -= y;
  z += x;
  x <<= 1;
  x -= z;
  y += z;
  z <<= 1;
  z -= y;
  w += x;
  x <<= 1;
  x -= w;
  p[0] = static_cast<int32_t>(x);
  p[1] = static_cast<int32_t>(y);
  p[2] = static_cast<int32_t>(z);
  p[3] = static_cast<int32_t>(w);
}

// Bit k of u[0..4): plane k of the block, value i in bit i.
HYCC_HD inline uint32_t bit_plane(const uint32_t* u, uint32_t k) {
  return ((u[0] >> k) & 1u) | ((u[1] >> k) & 1u) << 1 | ((u[2] >> k) & 1u) << 2 |
         ((u[3] >> k) & 1u) << 3;
}

// zfp's group tests of one bit plane above its n values already known to be significant, as one
// code (first bit in bit 0); returns the code's length (0..7) and updates n. x holds the plane's
// bits of values n..3 (x = plane >> n). For each set bit in turn: a 1 (something is left), then
// one bit per value up to and including the set one, except that a set bit of the last value is
// implied; then a 0 (nothing left) unless every value is significant.
HYCC_HD inline uint32_t group_test_code(uint32_t x, uint32_t& n, uint32_t& code) {
  code = 0;
  uint32_t length = 0;
  while (n < kBlockValues) {
    if (x == 0) return length + 1;  // a 0: the rest of the plane is zero
    code |= 1u << length++;
    const auto zeros = static_cast<uint32_t>(countr_zero64(x));
    if (n + zeros >= kBlockValues - 1) {  // the last value: its 1 is implied
      length += kBlockValues - 1 - n;
      n = kBlockValues;
      break;
    }
    length += zeros;
    code |= 1u << length++;
    n += zeros + 1;
    x >>= zeros + 1;
  }
  return length;
}

// The longest code of one plane: verbatim bits and group tests together.
inline constexpr uint32_t kMaxPlaneCodeBits = 7;

// Decodes the group tests of one plane from `window` (its next bits, as many as the code can
// take, 7 - n): adds the plane's bits of values n..3 to x, updates n, returns the bits used.
HYCC_HD inline uint32_t decode_group_tests(uint32_t window, uint32_t& n, uint32_t& x) {
  uint32_t used = 0;
  while (n < kBlockValues) {
    if (((window >> used++) & 1u) == 0) break;            // the rest of the plane is zero
    const uint32_t explicit_bits = kBlockValues - 1 - n;  // before the implied last one
    const auto zeros =
        static_cast<uint32_t>(countr_zero64((window >> used) | (uint64_t{1} << explicit_bits)));
    used += zeros < explicit_bits ? zeros + 1 : explicit_bits;
    n += zeros;
    x |= 1u << n++;
  }
  return used;
}

// The code of one whole bit plane, computed: its first n bits verbatim (n = values known to be
// significant), then the group tests of the rest. The GPU kernels run it; the CPU codec looks
// the same codes up in a table built from it (codec/zfp_plane_table.h).
struct ComputedPlaneCoder {
  // encode_bit_planes puts each plane's code on its own.
  HYCC_HD uint32_t planes_per_put(uint32_t /*budget*/) const { return 1; }
  // The planes of one block's u[0..4): planes(k) is bit_plane(u, k).
  struct Planes {
    const uint32_t* u;
    HYCC_HD uint32_t operator()(uint32_t k) const { return bit_plane(u, k); }
  };
  HYCC_HD Planes planes(const uint32_t* u) const { return {u}; }
  // Writes plane's code to *code (first bit in bit 0), updates n, returns the code's length.
  HYCC_HD uint32_t encode(uint32_t plane, uint32_t& n, uint32_t& code) const {
    const uint32_t verbatim = n;
    uint32_t tests;
    const uint32_t length = verbatim + group_test_code(plane >> verbatim, n, tests);
    code = (plane & ((1u << verbatim) - 1)) | tests << verbatim;
    return length;
  }
  // Decodes a plane from the next kMaxPlaneCodeBits bits of the stream into *plane, updates n,
  // returns the bits used.
  HYCC_HD uint32_t decode(uint32_t window, uint32_t& n, uint32_t& plane) const {
    const uint32_t verbatim = n;
    plane = window & ((1u << verbatim) - 1);
    return verbatim + decode_group_tests(window >> verbatim, n, plane);
  }
  // Decodes a plane from the last `bits` (< kMaxPlaneCodeBits) bits of the budget, in window's
  // low bits, bit by bit as zfp does: a code cut short after a positive group test sets the bit
  // of the value it stopped at, so it decodes differently from the same code followed by zeros.
  HYCC_HD uint32_t decode_cut(uint32_t window, uint32_t bits, uint32_t& n, uint32_t& plane) const {
    const uint32_t verbatim = n < bits ? n : bits;
    plane = window & ((1u << verbatim) - 1);
    uint32_t used = verbatim;
    while (n < kBlockValues && used < bits) {
      if (((window >> used++) & 1u) == 0) break;  // the rest of the plane is zero
      while (n < kBlockValues - 1 && used < bits) {
        if ((window >> used++) & 1u) break;
        ++n;
      }
      plane |= 1u << n++;
    }
    return used;
  }
};

// How many of the top planes, `zeros` of them all zero, the coders take as a single 0 bit each
// (the code of an all-zero plane while no value is significant): at most the budget, and no
// plane below kmin.
HYCC_HD inline uint32_t leading_zero_planes(uint32_t zeros, uint32_t budget, uint32_t kmin) {
  const uint32_t planes = 32 - kmin;
  const uint32_t z = zeros < planes ? zeros : planes;
  return z < budget ? z : budget;
}

// Encodes the bit planes of u[0..4) with at most `budget` bits, planes 31 down to kmin (zfp's
// encode_few_ints with maxprec = 32 - kmin): each plane's code, cut off where the budget ends.
template <class Writer, class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline void encode_bit_planes(const uint32_t* u, uint32_t budget, Writer& out,
                                      uint32_t kmin = 0, const PlaneCoder& coder = {}) {
  const auto planes = coder.planes(u);
  uint32_t bits = budget;
  uint32_t n = 0;
  // The planes above the block's highest set bit are a single 0 each, written at once.
  const uint32_t zero_planes =
      leading_zero_planes(32 - bit_width32(u[0] | u[1] | u[2] | u[3]), bits, kmin);
  out.put(0, zero_planes);
  bits -= zero_planes;
  // coder.planes_per_put(budget) planes at a time, their codes joined and cut to the budget at
  // once: a fixed number of steps between the data-dependent exits (planes past the budget are
  // coded for nothing, then cut off).
  const uint32_t chunk = coder.planes_per_put(budget);
  for (uint32_t k = 32 - zero_planes; bits != 0 && k > kmin;) {
    const uint32_t last = k - kmin > chunk ? k - chunk : kmin;
    uint64_t codes = 0;
    uint32_t length = 0;
    for (uint32_t j = k; j-- > last;) {
      uint32_t code;
      const uint32_t l = coder.encode(planes(j), n, code);
      codes |= uint64_t{code} << length;
      length += l;
    }
    const uint32_t used = length < bits ? length : bits;
    out.put(codes, used);
    bits -= used;
    k = last;
  }
}

// decode_bit_planes with the planes of a block whose values are all significant read in a loop
// of their own (kVerbatimTail: each such plane is its 4 bits verbatim, the last one cut to the
// budget, so where the next plane starts does not wait for a decode) or through the coder.
template <bool kVerbatimTail, class Reader, class PlaneCoder>
HYCC_HD inline void decode_planes(Reader& in, uint32_t budget, uint32_t* u, uint32_t kmin,
                                  const PlaneCoder& coder) {
  for (uint32_t i = 0; i < kBlockValues; ++i) u[i] = 0;
  uint32_t bits = budget;
  uint32_t n = 0;
  // Leading zero planes: a 0 bit each while no value is significant.
  const uint32_t zeros = in.peek(32);
  const uint32_t zero_planes =
      leading_zero_planes(zeros == 0 ? 32 : countr_zero64(zeros), bits, kmin);
  in.skip(zero_planes);
  bits -= zero_planes;
  uint32_t k = 32 - zero_planes;
  for (; bits != 0 && (!kVerbatimTail || n < kBlockValues) && k > kmin;) {
    --k;
    const uint32_t window = in.peek(kMaxPlaneCodeBits);
    uint32_t x;
    const uint32_t used = bits >= kMaxPlaneCodeBits
                              ? coder.decode(window, n, x)
                              : coder.decode_cut(window & ((1u << bits) - 1), bits, n, x);
    in.skip(used);
    bits -= used;
    for (uint32_t i = 0; i < kBlockValues; ++i) u[i] |= ((x >> i) & 1u) << k;
  }
  for (; kVerbatimTail && bits != 0 && k > kmin;) {
    --k;
    const uint32_t used = bits < kBlockValues ? bits : kBlockValues;
    const uint32_t x = in.take(used);
    bits -= used;
    for (uint32_t i = 0; i < kBlockValues; ++i) u[i] |= ((x >> i) & 1u) << k;
  }
}

// Decodes bit planes written by encode_bit_planes with the same budget and kmin (zfp's
// decode_few_ints). Budgets of 32 bits and more read the planes of all-significant blocks in a
// loop of their own; below, a block has a plane or two left then, too few to pay for a second
// loop's exit (zfp:rate=8 has 23 bits, rate=16 55).
template <class Reader, class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline void decode_bit_planes(Reader& in, uint32_t budget, uint32_t* u, uint32_t kmin = 0,
                                      const PlaneCoder& coder = {}) {
  if (budget >= 32) {
    decode_planes<true>(in, budget, u, kmin, coder);
  } else {
    decode_planes<false>(in, budget, u, kmin, coder);
  }
}

// Steps 1 to 3 of encoding: returns the block's exponent emax (block_exponent, -127 for an
// all-zero block, whose u is then of no use) and writes its values as negabinary integers u[0..4).
HYCC_HD inline int block_integers(const float* x, uint32_t* u) {
  const int emax = block_exponent(x);
  const float scale = power_of_two(30 - emax);
  int32_t ints[kBlockValues];
  for (uint32_t i = 0; i < kBlockValues; ++i) ints[i] = truncate_like_x86(scale * x[i]);
  forward_lift(ints);
  for (uint32_t i = 0; i < kBlockValues; ++i) {
    u[i] = (static_cast<uint32_t>(ints[i]) + kNegabinaryMask) ^ kNegabinaryMask;
  }
  return emax;
}

// The steps of decoding after the bit planes: the 4 floats of a block of exponent emax whose
// values are the negabinary integers u[0..4). u = 0 gives +0 for any emax up to 128.
HYCC_HD inline void block_floats(int emax, const uint32_t* u, float* x) {
  int32_t ints[kBlockValues];
  for (uint32_t i = 0; i < kBlockValues; ++i) {
    ints[i] = static_cast<int32_t>((u[i] ^ kNegabinaryMask) - kNegabinaryMask);
  }
  inverse_lift(ints);
  const float scale = power_of_two(emax - 30);
  for (uint32_t i = 0; i < kBlockValues; ++i) x[i] = scale * static_cast<float>(ints[i]);
}

// Encodes a block given by block_integers into exactly block_bits (9..128) bits; `out` starts
// zeroed.
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline void encode_block_integers(int emax, const uint32_t* u, uint32_t block_bits,
                                          BlockBits& out, const PlaneCoder& coder = {}) {
  const auto biased = static_cast<uint32_t>(emax + 127);
  if (biased == 0) return;  // a single 0 bit, then zero padding
  BlockBitWriter writer(out);
  writer.put(2 * biased + 1, kMinBlockBits);
  encode_bit_planes(u, block_bits - kMinBlockBits, writer, 0, coder);
}

// Encodes 4 finite floats into exactly block_bits (9..128) bits; `out` starts zeroed.
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline void encode_block(const float* x, uint32_t block_bits, BlockBits& out,
                                 const PlaneCoder& coder = {}) {
  uint32_t u[kBlockValues];
  const int emax = block_integers(x, u);
  encode_block_integers(emax, u, block_bits, out, coder);
}

// Reads a block of block_bits (9..128) bits as block_floats takes it: returns emax and writes u
// (u = 0 for a block coded as a single 0 bit).
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline int decode_block_integers(const BlockBits& in, uint32_t block_bits, uint32_t* u,
                                         const PlaneCoder& coder = {}) {
  BlockBitReader reader(in);
  if (!reader.take(1)) {
    for (uint32_t i = 0; i < kBlockValues; ++i) u[i] = 0;
    return 0;
  }
  const int emax = static_cast<int>(reader.take(8)) - 127;
  decode_bit_planes(reader, block_bits - kMinBlockBits, u, 0, coder);
  return emax;
}

// Decodes a block of block_bits (9..128) bits into 4 floats.
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline void decode_block(const BlockBits& in, uint32_t block_bits, float* x,
                                 const PlaneCoder& coder = {}) {
  uint32_t u[kBlockValues];
  const int emax = decode_block_integers(in, block_bits, u, coder);
  block_floats(emax, u, x);
}

// --- fixed accuracy ---------------------------------------------------------------------------
// zfp_stream_set_accuracy(2^minexp) (minbits 1, no bit budget, maxprec 64, minexp): a block keeps
// its bit planes down to precision(emax) = clamp(emax - minexp + 4, 0, 64) below the top (1-D:
// 2 (dims + 1) = 4 guard planes), so blocks have variable sizes, 1..140 bits; a block with
// precision 0 (all values far below the tolerance) or all zeros is a single 0 bit. Decoding gets
// at most kMaxAccuracyBlockBits per block, as the codec's libzfp decoder did.

inline constexpr uint32_t kMaxAccuracyBlockBits = 1 + 8 + 4 * 32 + 3;  // zfp's bound for floats

// The bits of one variable-size block, least significant bit of w[0] first (at most 192).
struct WideBlockBits {
  uint64_t w[3] = {0, 0, 0};
};

// Appends bits to a WideBlockBits; the caller never writes past bit 192.
class WideBitWriter {
 public:
  HYCC_HD explicit WideBitWriter(WideBlockBits& bits) : bits_(bits) {}
  // Writes the low n (<= 64) bits of value.
  HYCC_HD void put(uint64_t value, uint32_t n) {
    if (n == 0) return;
    if (n < 64) value &= (uint64_t{1} << n) - 1;
    const uint32_t word = pos_ / 64, shift = pos_ % 64;
    bits_.w[word] |= value << shift;
    if (shift != 0 && shift + n > 64) bits_.w[word + 1] |= value >> (64 - shift);
    pos_ += n;
  }
  HYCC_HD uint32_t position() const { return pos_; }

 private:
  WideBlockBits& bits_;
  uint32_t pos_ = 0;
};

// Reads bits from a WideBlockBits; reading past bit 192 gives zeros.
class WideBitReader {
 public:
  HYCC_HD explicit WideBitReader(const WideBlockBits& bits) : bits_(bits) {}
  // Reads n (<= 32) bits.
  HYCC_HD uint32_t take(uint32_t n) {
    const uint32_t v = peek(n);
    pos_ += n;
    return v;
  }
  // The next n (<= 32) bits, without reading them.
  HYCC_HD uint32_t peek(uint32_t n) const {
    if (n == 0) return 0;
    uint64_t v = 0;
    const uint32_t word = pos_ / 64, shift = pos_ % 64;
    if (word < 3) {
      v = bits_.w[word] >> shift;
      if (shift != 0 && shift + n > 64 && word + 1 < 3) v |= bits_.w[word + 1] << (64 - shift);
    }
    return static_cast<uint32_t>(v & ((uint64_t{1} << n) - 1));
  }
  HYCC_HD void skip(uint32_t n) { pos_ += n; }
  HYCC_HD uint32_t position() const { return pos_; }

 private:
  const WideBlockBits& bits_;
  uint32_t pos_ = 0;
};

// zfp's precision(emax, maxprec 64, minexp, 1 dimension): the bit planes a block keeps.
HYCC_HD inline uint32_t accuracy_precision(int emax, int minexp) {
  const int p = emax - minexp + 4;
  return p <= 0 ? 0u : (p >= 64 ? 64u : static_cast<uint32_t>(p));
}

// Encodes a block given by block_integers as zfp's fixed-accuracy mode with tolerance 2^minexp
// does; `out` starts zeroed. Returns the block's size in bits (1..kMaxAccuracyBlockBits).
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline uint32_t encode_block_accuracy_integers(int emax, const uint32_t* u, int minexp,
                                                       WideBlockBits& out,
                                                       const PlaneCoder& coder = {}) {
  const uint32_t maxprec = accuracy_precision(emax, minexp);
  const uint32_t biased = maxprec != 0 ? static_cast<uint32_t>(emax + 127) : 0u;
  if (biased == 0) return 1;  // a single 0 bit
  WideBitWriter writer(out);
  writer.put(2 * biased + 1, kMinBlockBits);
  encode_bit_planes(u, kMaxAccuracyBlockBits - kMinBlockBits, writer,
                    maxprec < 32 ? 32 - maxprec : 0, coder);
  return writer.position();
}

// Encodes 4 finite floats as zfp's fixed-accuracy mode with tolerance 2^minexp does; `out`
// starts zeroed. Returns the block's size in bits (1..kMaxAccuracyBlockBits).
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline uint32_t encode_block_accuracy(const float* x, int minexp, WideBlockBits& out,
                                              const PlaneCoder& coder = {}) {
  uint32_t u[kBlockValues];
  const int emax = block_integers(x, u);
  return encode_block_accuracy_integers(emax, u, minexp, out, coder);
}

// Reads a fixed-accuracy block (tolerance 2^minexp) as block_floats takes it: writes emax and u
// (u = 0 for a block coded as a single 0 bit); returns the bits it took.
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline uint32_t decode_block_accuracy_integers(const WideBlockBits& in, int minexp,
                                                       int& emax, uint32_t* u,
                                                       const PlaneCoder& coder = {}) {
  WideBitReader reader(in);
  if (!reader.take(1)) {
    for (uint32_t i = 0; i < kBlockValues; ++i) u[i] = 0;
    emax = 0;
    return 1;
  }
  emax = static_cast<int>(reader.take(8)) - 127;
  const uint32_t maxprec = accuracy_precision(emax, minexp);
  decode_bit_planes(reader, kMaxAccuracyBlockBits - kMinBlockBits, u,
                    maxprec < 32 ? 32 - maxprec : 0, coder);
  return reader.position();
}

// Decodes a fixed-accuracy block (tolerance 2^minexp) into 4 floats; returns the bits it took.
template <class PlaneCoder = ComputedPlaneCoder>
HYCC_HD inline uint32_t decode_block_accuracy(const WideBlockBits& in, int minexp, float* x,
                                              const PlaneCoder& coder = {}) {
  int emax;
  uint32_t u[kBlockValues];
  const uint32_t bits = decode_block_accuracy_integers(in, minexp, emax, u, coder);
  block_floats(emax, u, x);
  return bits;
}

// Pads a partial block of n (1..3) values as zfp does: x[1] = x[0], x[2] = x[1], x[3] = x[0].
HYCC_HD inline void pad_partial_block(float* x, uint32_t n) {
  if (n <= 1) x[1] = x[0];
  if (n <= 2) x[2] = x[1];
  if (n <= 3) x[3] = x[0];
}

// Little-endian load of up to 8 bytes of data[0, size) from byte `at` on, zeros past the end.
HYCC_HD inline uint64_t load_bytes_le(const uint8_t* data, uint64_t size, uint64_t at) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < 8 && at + i < size; ++i) v |= uint64_t{data[at + i]} << (8 * i);
  return v;
}

// n (1..64) bits of data[0, size) from bit `pos` on (zeros past the end).
HYCC_HD inline uint64_t load_bits(const uint8_t* data, uint64_t size, uint64_t pos, uint32_t n) {
  const uint64_t at = pos >> 3;
  const uint32_t shift = static_cast<uint32_t>(pos & 7);
  uint64_t v = load_bytes_le(data, size, at) >> shift;
  if (shift + n > 64) v |= load_bytes_le(data, size, at + 8) << (64 - shift);
  return n < 64 ? v & ((uint64_t{1} << n) - 1) : v;
}

// The block_bits bits of a stream starting at bit `pos`.
HYCC_HD inline BlockBits load_block(const uint8_t* data, uint64_t size, uint64_t pos,
                                    uint32_t block_bits) {
  BlockBits b;
  b.lo = load_bits(data, size, pos, block_bits < 64 ? block_bits : 64);
  if (block_bits > 64) b.hi = load_bits(data, size, pos + 64, block_bits - 64);
  return b;
}

// ORs the bits of block `lane` (0..31) of a run of 32 blocks into `span`, the run's
// block_bits 32-bit words (bit i of the run is bit i % 32 of word i / 32, little-endian: the
// stream's bytes): or_word(w, bits) ORs bits into word w. The 32 blocks of a warp start at a
// word boundary of the stream and fill exactly block_bits words, so warps never share a word.
template <class OrWord>
HYCC_HD inline void or_into_span(const BlockBits& bits, uint32_t lane, uint32_t block_bits,
                                 OrWord or_word) {
  const uint32_t words[4] = {static_cast<uint32_t>(bits.lo), static_cast<uint32_t>(bits.lo >> 32),
                             static_cast<uint32_t>(bits.hi), static_cast<uint32_t>(bits.hi >> 32)};
  const uint32_t at = lane * block_bits, shift = at % 32;
  for (uint32_t k = 0; k < 4 && 32 * k < block_bits; ++k) {
    if (words[k] == 0) continue;
    const uint32_t w = at / 32 + k;
    or_word(w, words[k] << shift);
    // The bits shifted out are past the block's end (zero) when w is the span's last word.
    if (shift != 0 && w + 1 < block_bits) or_word(w + 1, words[k] >> (32 - shift));
  }
}

}  // namespace hycc::codec::zfp
