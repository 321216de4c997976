// Our own zfp fixed-accuracy coder for 1-D float fields (the per-block steps are in
// codec/block/zfp_block.h, encode_block_accuracy / decode_block_accuracy): streams bit-identical
// to those libzfp writes with zfp_stream_set_accuracy(2^minexp) for the same finite input, blocks
// of 4 values of 1..140 bits each, a partial last block padded as zfp pads it, the stream flushed
// to whole bytes. tests/unit/zfp_fixed_accuracy_test.cc compares both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/block/zfp_block.h"
#include "codec/zfp_fixed_rate.h"
#include "codec/zfp_plane_table.h"

namespace hycc::codec::zfp {

// Writes blocks one after the other into a buffer of at least
// ceil(blocks * kMaxAccuracyBlockBits / 8) bytes.
class FixedAccuracyWriter {
 public:
  FixedAccuracyWriter(std::byte* out, int minexp) : bits_(out), minexp_(minexp) {}

  // Encodes n finite values, in blocks of 4; a partial last block (n not a multiple of 4) is
  // padded as zfp pads it, so only the stream's last call may end with one.
  void write(const float* values, size_t n);
  // Flushes the last bits; returns the stream length in bytes.
  size_t finish() { return bits_.finish(); }

 private:
  void put(int emax, const uint32_t* u);

  StreamBitWriter bits_;
  int minexp_;
  const TablePlaneCoder& coder_ = TablePlaneCoder::instance();
};

// Reads blocks one after the other from a stream of `bytes` bytes. Never reads outside it: bits
// past its end read as zeros, and consumed_bytes() then exceeds `bytes` (a truncated or corrupt
// stream, which the caller rejects).
class FixedAccuracyReader {
 public:
  FixedAccuracyReader(const std::byte* in, size_t bytes, int minexp)
      : in_(reinterpret_cast<const uint8_t*>(in)), bytes_(bytes), minexp_(minexp) {}

  // Decodes the next blocks into n values (the last block partial when n is not a multiple
  // of 4, so only the stream's last call may end with one).
  void read(float* values, size_t n);
  // Bytes up to the end of the last block read.
  uint64_t consumed_bytes() const { return (pos_ + 7) / 8; }

 private:
  // The next block's exponent and integers (decode_block_accuracy_integers).
  int take(uint32_t* u);

  const uint8_t* in_;
  uint64_t bytes_;
  int minexp_;
  uint64_t pos_ = 0;
  const TablePlaneCoder& coder_ = TablePlaneCoder::instance();
};

}  // namespace hycc::codec::zfp
