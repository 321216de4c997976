// The host's part of "exphuff" on a device (codec/cuda/exphuff_kernels.cu): from the blocks'
// per-stream exponent histograms, the payload's directory, each coded block's head (code-length
// table and stream sizes) and where every stream goes; and for decoding, the directory and heads
// checked as the CPU decoder checks them. The kernels do the per-element work; the tables are
// built here, by the CPU codec's functions (exphuff_table.h), so both write the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/block/exp_huffman.h"

namespace hycc::codec::exphuff {

// Bytes of a head in the plan's heads[]: the largest table (128) and the stream sizes.
inline constexpr size_t kHeadStride = 128 + kStreamSizesBytes;

struct StreamSpan {
  uint64_t at = 0;     // first byte, from the payload's start
  uint32_t bytes = 0;  // its bytes (a raw block: its exponents)
  uint32_t pad = 0;
};

struct DevicePlan {
  size_t payload_bytes = 0;
  std::vector<uint8_t> directory;    // blocks x kDirectoryEntryBytes, as stored
  std::vector<uint64_t> section_at;  // per block, from the payload's start
  std::vector<uint8_t> heads;        // blocks x kHeadStride: a coded block's head, as stored
  std::vector<uint32_t> codes;       // blocks x 256 packed_code()s (coded blocks; else 0)
  std::vector<StreamSpan> streams;   // blocks x kStreams (raw blocks: one span in stream 0)
};

// histograms: blocks x kStreams x 256 counts of the exponents of each stream.
DevicePlan plan_encoding(const uint32_t* histograms, size_t count, size_t block, Fields f);

// Checks the directory of a payload of payload_bytes bytes (as the CPU decoder does; throws
// CorruptStream) and returns each block's section offset from the payload's start.
std::vector<uint64_t> check_directory(const uint8_t* directory, size_t payload_bytes, size_t count,
                                      size_t block, Fields f);

// The decoding plan from the checked directory and the coded blocks' heads (heads[b *
// kHeadStride], table_bytes + kStreamSizesBytes bytes each); throws CorruptStream for a bad code
// table or stream sizes.
DevicePlan plan_decoding(const uint8_t* directory, std::vector<uint64_t> section_at,
                         const uint8_t* heads, size_t payload_bytes, Fields f);

}  // namespace hycc::codec::exphuff
