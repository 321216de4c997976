// A fast, non-cryptographic 64-bit checksum (an xxHash64-style construction) that detects
// truncation, bit flips and reordering in compressed streams at memory speed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hycc {

// Checksum of `n` bytes at `data`; chaining with `seed` = a previous result hashes a sequence.
uint64_t checksum64(const void* data, size_t n, uint64_t seed = 0);

}  // namespace hycc
