// Our own zfp fixed-rate coder for 1-D float fields (the per-block steps are in
// codec/block/zfp_block.h, shared with the CUDA kernels): streams bit-identical to those libzfp
// writes with zfp_stream_set_rate(R, zfp_type_float, 1, zfp_false) for the same finite input,
// blocks of 4 values, a partial last block padded as zfp pads it, the stream flushed to whole
// bytes (Debian's libzfp, 8-bit stream words). tests/unit/zfp_fixed_rate_test.cc compares both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "codec/block/zfp_block.h"
#include "codec/zfp_block_x4.h"
#include "codec/zfp_plane_table.h"

namespace hycc::codec::zfp {

// Bytes of the stream of `count` values at block_bits bits per block of 4.
inline uint64_t fixed_rate_bytes(uint64_t count, uint32_t block_bits) {
  const uint64_t blocks = (count + kBlockValues - 1) / kBlockValues;
  return blocks / 8 * block_bits + (blocks % 8 * block_bits + 7) / 8;
}

// kCount 64-bit words of a stream of `bytes` bytes from bit `pos` on, bits past its end zero
// (load_bits, whole words at a time where the stream holds them).
template <uint32_t kCount>
inline void load_stream_words(const uint8_t* in, uint64_t bytes, uint64_t pos, uint64_t* words) {
  const uint64_t at = pos >> 3;
  if (at + 8 * (kCount + 1) > bytes) {
    for (uint32_t i = 0; i < kCount; ++i) words[i] = load_bits(in, bytes, pos + 64 * i, 64);
    return;
  }
  uint64_t w[kCount + 1];
  std::memcpy(w, in + at, sizeof w);  // little-endian hosts only, as the stream layer
  const auto shift = static_cast<uint32_t>(pos & 7);
  for (uint32_t i = 0; i < kCount; ++i) {
    words[i] = shift == 0 ? w[i] : (w[i] >> shift) | (w[i + 1] << (64 - shift));
  }
}

// Appends bits to a byte stream, least significant bit first (zfp's order with byte words).
class StreamBitWriter {
 public:
  explicit StreamBitWriter(std::byte* out) : out_(out), begin_(out) {}
  void append(uint64_t bits, uint32_t n);  // n <= 64, bits above n zero
  // Flushes the last bits; returns the stream length in bytes.
  size_t finish();

 private:
  std::byte* out_;
  std::byte* begin_;
  uint64_t acc_ = 0;   // bits not yet stored, the next one in bit 0
  uint32_t fill_ = 0;  // number of them, < 64
};

// Writes blocks one after the other into a buffer of at least fixed_rate_bytes bytes.
class FixedRateWriter {
 public:
  FixedRateWriter(std::byte* out, uint32_t block_bits) : bits_(out), block_bits_(block_bits) {}

  // Encodes n finite values, in blocks of 4; a partial last block (n not a multiple of 4) is
  // padded as zfp pads it, so only the stream's last call may end with one.
  void write(const float* values, size_t n);
  // Flushes the last bits; returns the stream length in bytes.
  size_t finish() { return bits_.finish(); }

 private:
  void put(int emax, const uint32_t* u);

  StreamBitWriter bits_;
  uint32_t block_bits_;
  const TablePlaneCoder& coder_ = TablePlaneCoder::instance();
};

// Reads blocks one after the other from a stream of `bytes` bytes; never reads outside it
// (bits past its end read as zeros).
class FixedRateReader {
 public:
  FixedRateReader(const std::byte* in, size_t bytes, uint32_t block_bits)
      : in_(reinterpret_cast<const uint8_t*>(in)), bytes_(bytes), block_bits_(block_bits) {}

  // Decodes the next blocks into n values (the last block partial when n is not a multiple
  // of 4, so only the stream's last call may end with one).
  void read(float* values, size_t n);
  // Bytes up to the end of the last block read.
  uint64_t consumed_bytes() const { return (pos_ + 7) / 8; }

 private:
  BlockBits fetch() const;
  // The next block's exponent and integers (decode_block_integers).
  int take(uint32_t* u);

  const uint8_t* in_;
  uint64_t bytes_;
  uint32_t block_bits_;
  uint64_t pos_ = 0;
  const TablePlaneCoder& coder_ = TablePlaneCoder::instance();
};

}  // namespace hycc::codec::zfp
