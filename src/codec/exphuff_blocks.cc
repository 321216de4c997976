#include "codec/exphuff_blocks.h"

#include <array>
#include <cstring>

#include "codec/block/exp_huffman.h"
#include "codec/byte_io.h"
#include "hycc/error.h"

namespace hycc::codec::exphuff {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:exphuff", what));
}

template <typename W, int kExponentBits, int kMantissaBits>
struct Format {
  using Word = W;
  static constexpr Fields kFields{kExponentBits, kMantissaBits};
  static constexpr int kRestBits = kMantissaBits + 1;
  static constexpr uint32_t kExponentMask = (1u << kExponentBits) - 1;
};
using BF16 = Format<uint16_t, 8, 7>;
using F16 = Format<uint16_t, 5, 10>;
using F32 = Format<uint32_t, 8, 23>;

template <typename F>
void split(const typename F::Word* in, size_t n, uint8_t* rest, uint8_t* exponents,
           uint64_t* histogram) {
  // Four histograms: runs of one exponent would otherwise wait on their own increments.
  std::array<std::array<uint32_t, 256>, 4> counts{};
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = in[i];
    const uint32_t e = (w >> F::kFields.mantissa_bits) & F::kExponentMask;
    exponents[i] = static_cast<uint8_t>(e);
    ++counts[i % 4][e];
    const uint32_t r = rest_of(w, F::kFields);
    if constexpr (F::kRestBits == 8) {
      rest[i] = static_cast<uint8_t>(r);
    } else if constexpr (F::kRestBits == 24) {
      std::memcpy(rest + 3 * i, &r, 3);  // little-endian
    }
  }
  if constexpr (F::kRestBits != 8 && F::kRestBits != 24) {  // f16: 11 bits, 8 values in 11 bytes
    uint64_t acc = 0;
    int pending = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      acc |= static_cast<uint64_t>(rest_of(in[i], F::kFields)) << pending;
      pending += F::kRestBits;
      if (pending >= 32) {
        store_u32(rest + at, static_cast<uint32_t>(acc));
        at += 4;
        acc >>= 32;
        pending -= 32;
      }
    }
    for (; pending > 0; pending -= 8, acc >>= 8) rest[at++] = static_cast<uint8_t>(acc);
  }
  for (size_t s = 0; s < 256; ++s) {
    histogram[s] += uint64_t{counts[0][s]} + counts[1][s] + counts[2][s] + counts[3][s];
  }
}

template <typename F>
void join(const uint8_t* rest, size_t rest_bytes, const uint8_t* exponents, size_t n,
          typename F::Word* out) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t r;
    if constexpr (F::kRestBits == 8) {
      r = rest[i];
    } else if constexpr (F::kRestBits == 24) {
      r = rest[3 * i] | (uint32_t{rest[3 * i + 1]} << 8) | (uint32_t{rest[3 * i + 2]} << 16);
    } else {  // one 8-byte load where 8 bytes remain
      const size_t bit = i * F::kRestBits;
      r = bit / 8 + 8 <= rest_bytes ? static_cast<uint32_t>(load_u64(rest + bit / 8) >> (bit % 8)) &
                                          ((1u << F::kRestBits) - 1)
                                    : read_bits(rest, rest_bytes, bit, F::kRestBits);
    }
    out[i] = static_cast<typename F::Word>(exphuff::join(exponents[i], r, F::kFields));
  }
}

// LSB-first writer that stores 8 bytes at a time (up to 7 past its end), flushed every 4 codes
// of at most 12 bits.
class StreamWriter {
 public:
  explicit StreamWriter(uint8_t* out) : begin_(out), at_(out) {}
  void put(Code c) {
    acc_ |= static_cast<uint64_t>(c.bits) << pending_;
    pending_ += c.length;
  }
  void flush() {
    store_u64(at_, acc_);
    const int bytes = pending_ / 8;
    at_ += bytes;
    acc_ >>= 8 * bytes;  // at most 6 bytes: 7 pending bits and 4 codes
    pending_ %= 8;
  }
  size_t finish() {
    flush();
    if (pending_ > 0) ++at_;  // the partial byte flush() stored
    return static_cast<size_t>(at_ - begin_);
  }

 private:
  uint8_t* begin_;
  uint8_t* at_;
  uint64_t acc_ = 0;
  int pending_ = 0;
};

size_t encode_stream(const uint8_t* exponents, size_t n, std::span<const Code> codes,
                     uint8_t* out) {
  StreamWriter w(out);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    w.put(codes[exponents[i]]);
    w.put(codes[exponents[i + 1]]);
    w.put(codes[exponents[i + 2]]);
    w.put(codes[exponents[i + 3]]);
    w.flush();
  }
  for (; i < n; ++i) w.put(codes[exponents[i]]);
  return w.finish();
}

// One stream being decoded.
struct StreamReader {
  const uint8_t* data;
  size_t bytes;
  size_t bit = 0;
  uint8_t* out;
  size_t n;
  size_t done = 0;
  int invalid = 0;

  bool can_take_four() const { return done + 4 <= n && bit / 8 + 8 <= bytes; }
  // Four codes from one 8-byte load: at least 57 bits after the shift, 48 needed.
  void take_four(const uint16_t* table) {
    uint64_t window = load_u64(data + bit / 8) >> (bit % 8);
    for (int k = 0; k < 4; ++k) {
      const uint16_t e = table[window & ((1u << kMaxCodeBits) - 1)];
      const int length = lut_length(e);
      invalid |= length == 0;
      out[done++] = static_cast<uint8_t>(lut_symbol(e));
      window >>= length;
      bit += static_cast<size_t>(length);
    }
  }
  void take_rest(const uint16_t* table) {
    for (; done < n; ++done) {
      const uint16_t e = table[peek_code(data, bytes, bit)];
      const int length = lut_length(e);
      invalid |= length == 0;
      out[done] = static_cast<uint8_t>(lut_symbol(e));
      bit += static_cast<size_t>(length);
    }
  }
};

}  // namespace

void split_block(ConstTensorView in, size_t begin, size_t n, uint8_t* rest_area, uint8_t* exponents,
                 uint64_t* histogram) {
  const Fields f = fields_of(in.dtype);
  uint8_t* rest = rest_area + begin * static_cast<size_t>(f.rest_bits()) / 8;
  switch (in.dtype) {
    case DType::kBF16:
      return split<BF16>(static_cast<const uint16_t*>(in.data) + begin, n, rest, exponents,
                         histogram);
    case DType::kF16:
      return split<F16>(static_cast<const uint16_t*>(in.data) + begin, n, rest, exponents,
                        histogram);
    default:
      return split<F32>(static_cast<const uint32_t*>(in.data) + begin, n, rest, exponents,
                        histogram);
  }
}

void join_block(const uint8_t* rest_area, size_t rest_bytes, const uint8_t* exponents, size_t begin,
                size_t n, TensorView out) {
  const Fields f = fields_of(out.dtype);
  const size_t skip = begin * static_cast<size_t>(f.rest_bits()) / 8;
  const uint8_t* rest = rest_area + skip;
  switch (out.dtype) {
    case DType::kBF16:
      return join<BF16>(rest, rest_bytes - skip, exponents, n,
                        static_cast<uint16_t*>(out.data) + begin);
    case DType::kF16:
      return join<F16>(rest, rest_bytes - skip, exponents, n,
                       static_cast<uint16_t*>(out.data) + begin);
    default:
      return join<F32>(rest, rest_bytes - skip, exponents, n,
                       static_cast<uint32_t*>(out.data) + begin);
  }
}

size_t encode_streams(const uint8_t* exponents, size_t n, std::span<const Code> codes,
                      uint8_t* out) {
  size_t at = kStreamSizesBytes;
  for (int k = 0; k < kStreams; ++k) {
    const size_t bytes =
        encode_stream(exponents + stream_first(n, k), stream_count(n, k), codes, out + at);
    if (k < kStreams - 1) store_u32(out + 4 * k, static_cast<uint32_t>(bytes));
    at += bytes;
  }
  return at;
}

std::array<size_t, kStreams> stream_sizes(const uint8_t* sizes, size_t bytes) {
  if (bytes < kStreamSizesBytes) corrupt("a coded block too short for its stream sizes");
  std::array<size_t, kStreams> out;
  size_t at = kStreamSizesBytes;
  for (int k = 0; k < kStreams; ++k) {
    const size_t left = bytes - at;
    out[k] = k < kStreams - 1 ? load_u32(sizes + 4 * k) : left;
    if (out[k] > left) corrupt("a coded block's streams are longer than its section");
    at += out[k];
  }
  return out;
}

void decode_streams(const uint8_t* in, size_t bytes, size_t n, const uint16_t* table,
                    uint8_t* exponents) {
  const std::array<size_t, kStreams> sizes = stream_sizes(in, bytes);
  std::array<StreamReader, kStreams> streams;
  size_t at = kStreamSizesBytes;
  for (int k = 0; k < kStreams; ++k) {
    streams[k] = {in + at, sizes[k], 0, exponents + stream_first(n, k), stream_count(n, k)};
    at += sizes[k];
  }
  // The decoders side by side: their table lookups do not wait on each other.
  static_assert(kStreams == 4);
  while (streams[0].can_take_four() && streams[1].can_take_four() && streams[2].can_take_four() &&
         streams[3].can_take_four()) {
    for (StreamReader& s : streams) s.take_four(table);
  }
  for (StreamReader& s : streams) {
    while (s.can_take_four()) s.take_four(table);
    s.take_rest(table);
    if (s.invalid != 0) corrupt("a bit pattern that is no code of the block's table");
    if ((s.bit + 7) / 8 != s.bytes) {
      corrupt(detail::concat("a stream's codes take ", s.bit, " bits, the stream has ", s.bytes,
                             " bytes"));
    }
  }
}

}  // namespace hycc::codec::exphuff
