// The checksum of a device payload (checksum_transport.cc): computable in parallel at memory
// speed, unlike the sequential hash of the host streams' headers. The payload is read as 64-bit
// little-endian words w_0 .. w_{m-1} (the last one zero-padded); the checksum is
//   splitmix64(bytes) + sum_i splitmix64(w_i ^ (i * K))   (mod 2^64),
// a sum of terms that each depend on one word and its position, so any split of the words
// (threads, blocks) adds up to the same value. A changed word changes its term (splitmix64 is a
// bijection), a moved word changes two, a cut or extended payload changes the first term.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "common/synthetic_data.h"

namespace hycc::device {

inline constexpr uint64_t kChecksumPositionKey = 0xD6E8FEB86659FD93ull;

// Word i of a payload of `bytes` bytes (bytes past the end read as zero).
HYCC_HD inline uint64_t payload_word(const unsigned char* data, size_t bytes, size_t i) {
  uint64_t w = 0;
  const size_t at = 8 * i;
  const size_t n = bytes - at < 8 ? bytes - at : 8;
  for (size_t b = 0; b < n; ++b) w |= static_cast<uint64_t>(data[at + b]) << (8 * b);
  return w;
}

HYCC_HD inline uint64_t checksum_term(uint64_t word, size_t i) {
  return splitmix64(word ^ (static_cast<uint64_t>(i) * kChecksumPositionKey));
}

HYCC_HD inline uint64_t checksum_words(size_t bytes) { return (bytes + 7) / 8; }

// The whole checksum, one word after the other (the host emulation's, and the reference).
inline uint64_t payload_checksum(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = splitmix64(bytes);
  for (size_t i = 0; i < checksum_words(bytes); ++i)
    h += checksum_term(payload_word(p, bytes, i), i);
  return h;
}

}  // namespace hycc::device
