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
  int rest_bits() const { return mantissa_bits + 1; }
  int symbols() const { return 1 << exponent_bits; }
  // Bytes of a code-length table: a 4-bit length per exponent value.
  size_t table_bytes() const { return static_cast<size_t>(symbols()) / 2; }
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

}  // namespace hycc::codec::exphuff
