// The "exphuff" payload's parts shared by the fast coder, the reference and device code: how an
// element splits into its exponent (entropy-coded) and the rest (sign and mantissa, kept as
// they are), the block directory and the code-length table. Layout in codec_exphuff.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/host_device.h"
#include "hycc/dtype.h"

namespace hycc::codec::exphuff {

// Longest code: the decoder looks codes up in a table of 2^kMaxCodeBits entries (8 KiB).
inline constexpr int kMaxCodeBits = 12;
inline constexpr size_t kDirectoryEntryBytes = 8;

// A Huffman-coded block's exponents go in kStreams streams, stream k holding elements
// [k * q, min(n, (k + 1) * q)) with q = ceil(n / kStreams): independent decoders that the CPU
// runs side by side. After the code-length table: u32 bytes of streams 0..kStreams-2, then the
// streams, each padded to a byte.
inline constexpr int kStreams = 4;
inline constexpr size_t kStreamSizesBytes = 4 * (kStreams - 1);

HYCC_HD inline size_t stream_elements(size_t n) { return (n + kStreams - 1) / kStreams; }

// How a block's exponents are stored.
enum class BlockMode : uint8_t {
  kRaw = 0,       // one byte per exponent
  kHuffman = 1,   // code lengths, then the codes
  kConstant = 2,  // every exponent equals the directory's symbol; nothing stored
};

// The fields of a float format, sign | exponent | mantissa from the high bit down: the exponent is
// entropy-coded, sign and mantissa form the `rest`, (sign << mantissa_bits) | mantissa.
struct Fields {
  int exponent_bits;  // 8 (bf16, f32) or 5 (f16)
  int mantissa_bits;  // 7, 23, 10
  HYCC_HD int rest_bits() const { return mantissa_bits + 1; }
  HYCC_HD int symbols() const { return 1 << exponent_bits; }
  // Bytes of a code-length table: a 4-bit length per exponent value.
  HYCC_HD size_t table_bytes() const { return static_cast<size_t>(symbols()) / 2; }
};

HYCC_HD inline Fields fields_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return {8, 7};
    case DType::kF16:
      return {5, 10};
    default:
      return {8, 23};
  }
}

HYCC_HD inline uint32_t exponent_of(uint32_t word, Fields f) {
  return (word >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
}

HYCC_HD inline uint32_t rest_of(uint32_t word, Fields f) {
  const uint32_t sign = (word >> (f.mantissa_bits + f.exponent_bits)) & 1u;
  return (sign << f.mantissa_bits) | (word & ((1u << f.mantissa_bits) - 1));
}

HYCC_HD inline uint32_t join(uint32_t exponent, uint32_t rest, Fields f) {
  const uint32_t sign = rest >> f.mantissa_bits;
  return (sign << (f.mantissa_bits + f.exponent_bits)) | (exponent << f.mantissa_bits) |
         (rest & ((1u << f.mantissa_bits) - 1));
}

// Bytes of the rest area: every element's rest, packed LSB-first.
HYCC_HD inline size_t rest_area_bytes(size_t count, Fields f) {
  return (count * static_cast<size_t>(f.rest_bits()) + 7) / 8;
}

// A decoding-table entry: the symbol in the high bits, the code length in the low 4 (0 where
// no code starts with those bits).
HYCC_HD inline uint32_t lut_symbol(uint16_t entry) { return entry >> 4; }
HYCC_HD inline int lut_length(uint16_t entry) { return entry & 15; }

// The `width` (<= 24) bits of `data` (of `bytes` bytes) from bit `bit` on, LSB-first; bits past
// the end read as zero.
HYCC_HD inline uint32_t read_bits(const uint8_t* data, size_t bytes, size_t bit, int width) {
  const size_t at = bit / 8;
  uint32_t window = 0;
  for (size_t k = 0; k < 4 && at + k < bytes; ++k) {
    window |= static_cast<uint32_t>(data[at + k]) << (8 * k);
  }
  return (window >> (bit % 8)) & ((1u << width) - 1);
}

// The next code's bits: the decoding table's index.
HYCC_HD inline uint32_t peek_code(const uint8_t* data, size_t bytes, size_t bit) {
  return read_bits(data, bytes, bit, kMaxCodeBits);
}

// Where the areas of a payload of `count` elements in blocks of `block` start.
struct PayloadLayout {
  HYCC_HD PayloadLayout(size_t count, size_t block, Fields f)
      : blocks((count + block - 1) / block),
        rest_at(blocks * kDirectoryEntryBytes),
        exponents_at(rest_at + rest_area_bytes(count, f)) {}
  size_t blocks;
  size_t rest_at;
  size_t exponents_at;
};

// Elements [first, first + elements) of a block of n form stream k.
HYCC_HD inline size_t stream_first(size_t n, int k) {
  const size_t first = static_cast<size_t>(k) * stream_elements(n);
  return first < n ? first : n;
}
HYCC_HD inline size_t stream_count(size_t n, int k) {
  return stream_first(n, k + 1) - stream_first(n, k);
}

// A code as the device tables hold it: bits | length << 16.
HYCC_HD inline uint32_t packed_code(uint32_t bits, uint32_t length) { return bits | length << 16; }

// Enters the code (LSB-first bits, length >= 1) of `symbol` in a decoding table of
// 2^kMaxCodeBits entries: every index whose low `length` bits are the code.
HYCC_HD inline void put_table_entries(uint16_t* table, uint32_t symbol, uint32_t bits,
                                      uint32_t length) {
  const auto entry = static_cast<uint16_t>(symbol << 4 | length);
  for (uint32_t fill = 0; fill < (1u << (kMaxCodeBits - length)); ++fill) {
    table[bits | (fill << length)] = entry;
  }
}

// The simple stream coder of the device kernels (one thread per stream; the CPU codec's
// exphuff_blocks.cc writes the same bytes faster). Writes the codes of exponents[0, n) LSB-first,
// byte by byte, the last byte padded with zeros; returns the bytes written.
HYCC_HD inline size_t put_stream(const uint8_t* exponents, size_t n, const uint32_t* codes,
                                 uint8_t* out) {
  uint32_t acc = 0;
  int pending = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = codes[exponents[i]];
    acc |= (c & 0xffffu) << pending;
    pending += static_cast<int>(c >> 16);
    for (; pending >= 8; pending -= 8, acc >>= 8) out[at++] = static_cast<uint8_t>(acc);
  }
  if (pending > 0) out[at++] = static_cast<uint8_t>(acc);
  return at;
}

// Decodes n exponents from a stream of `bytes` bytes with a decoding table (entries as
// lut_symbol/lut_length); false where a bit pattern is no code or the codes do not end in the
// stream's last byte (exphuff_blocks.cc's decode_streams accepts the same streams).
HYCC_HD inline bool get_stream(const uint8_t* data, size_t bytes, size_t n, const uint16_t* table,
                               uint8_t* exponents) {
  size_t bit = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t e = table[peek_code(data, bytes, bit)];
    if (lut_length(e) == 0) return false;
    exponents[i] = static_cast<uint8_t>(lut_symbol(e));
    bit += static_cast<size_t>(lut_length(e));
  }
  return (bit + 7) / 8 == bytes;
}

// Elements are split and joined in groups of 8, whose rests fill rest_bits whole bytes.
inline constexpr size_t kGroup = 8;

// Group g of a tensor of `count` elements of words `in` (uint16_t or uint32_t): its exponents into
// exponents[8g..], its rests into their bytes of the rest area.
template <typename Word>
HYCC_HD inline void split_group(const Word* in, size_t count, size_t g, Fields f,
                                uint8_t* exponents, uint8_t* rest_area) {
  const size_t first = g * kGroup;
  const size_t m = count - first < kGroup ? count - first : kGroup;
  uint64_t acc[3] = {0, 0, 0};  // up to 8 x 24 bits
  for (size_t j = 0; j < m; ++j) {
    const uint32_t w = in[first + j];
    exponents[first + j] = static_cast<uint8_t>(exponent_of(w, f));
    const uint64_t r = rest_of(w, f);
    const size_t bit = j * static_cast<size_t>(f.rest_bits());
    acc[bit / 64] |= r << (bit % 64);
    if (bit % 64 + static_cast<size_t>(f.rest_bits()) > 64) {
      acc[bit / 64 + 1] |= r >> (64 - bit % 64);
    }
  }
  const size_t bytes = (m * static_cast<size_t>(f.rest_bits()) + 7) / 8;
  uint8_t* out = rest_area + g * static_cast<size_t>(f.rest_bits());
  for (size_t k = 0; k < bytes; ++k) out[k] = static_cast<uint8_t>(acc[k / 8] >> (8 * (k % 8)));
}

template <typename Word>
HYCC_HD inline void join_group(const uint8_t* rest_area, size_t rest_bytes,
                               const uint8_t* exponents, size_t count, size_t g, Fields f,
                               Word* out) {
  const size_t first = g * kGroup;
  const size_t m = count - first < kGroup ? count - first : kGroup;
  for (size_t j = 0; j < m; ++j) {
    const size_t bit = (first + j) * static_cast<size_t>(f.rest_bits());
    const uint32_t r = read_bits(rest_area, rest_bytes, bit, f.rest_bits());
    out[first + j] = static_cast<Word>(join(exponents[first + j], r, f));
  }
}

}  // namespace hycc::codec::exphuff
