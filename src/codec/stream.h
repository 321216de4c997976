// The stream header (48 bytes, little-endian):
//   0  magic "HYC"         3  format version (2)
//   4  codec id (u8)       5  dtype (u8)         6  flags (0)   7  reserved (0)
//   8  element count (u64)
//   16 payload bytes (u64)
//   24 codec parameters (16 bytes, codec-specific)
//   40 checksum: XXH3-64 of bytes 0..39, seeded with the XXH3-64 of the payload
// Version 1 streams (a hand-written xxHash64-style checksum over header and payload) are
// rejected: hashing the payload first lets codecs hash it in the pass that codes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hycc/codec.h"

namespace hycc::codec {

inline constexpr uint8_t kStreamVersion = 2;

struct StreamHeader {
  CodecId codec = CodecId::kNone;
  DType dtype = DType::kF32;
  uint64_t count = 0;
  uint64_t payload_bytes = 0;
  CodecParams params;
};

// XXH3-64 of a payload: the seed of the header's checksum.
uint64_t payload_checksum(std::span<const std::byte> payload);

// The checksum a stream header stores, over its first 40 bytes and its payload's checksum.
uint64_t header_checksum(const std::byte* header, uint64_t payload_sum);

// A parsed header's stored checksum, to test payload checksums against.
struct StreamSeal {
  const std::byte* header = nullptr;
  uint64_t stored = 0;

  bool accepts(uint64_t payload_sum) const {
    return header_checksum(header, payload_sum) == stored;
  }
};

// Writes the header into out[0, 48), sealed with the checksum of the payload that follows it.
void write_header(const StreamHeader& h, uint64_t payload_sum, std::span<std::byte> out);

// Recomputes the checksum of a stream in place (used by tests that corrupt payloads on purpose
// to exercise the structural validation of decoders behind the checksum).
void reseal_stream(std::span<std::byte> stream);

}  // namespace hycc::codec
