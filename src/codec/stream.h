// The stream header (48 bytes, little-endian):
//   0  magic "HYC"         3  format version (1)
//   4  codec id (u8)       5  dtype (u8)         6  flags (0)   7  reserved (0)
//   8  element count (u64)
//   16 payload bytes (u64)
//   24 codec parameters (16 bytes, codec-specific)
//   40 checksum64 of bytes 0..39 followed by the payload
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hycc/codec.h"

namespace hycc::codec {

inline constexpr uint8_t kStreamVersion = 1;

struct StreamHeader {
  CodecId codec = CodecId::kNone;
  DType dtype = DType::kF32;
  uint64_t count = 0;
  uint64_t payload_bytes = 0;
  CodecParams params;
};

// Writes the header into out[0, 48) and the checksum over it and out[48, 48 + payload_bytes).
void write_header(const StreamHeader& h, std::span<std::byte> out);

// Recomputes the checksum of a stream in place (used by tests that corrupt payloads on purpose
// to exercise the structural validation of decoders behind the checksum).
void reseal_stream(std::span<std::byte> stream);

}  // namespace hycc::codec
