// Little-endian writer/reader of the 16 parameter bytes a codec keeps in the stream header.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "hycc/codec.h"
#include "hycc/error.h"

namespace hycc::codec {

inline void put_u8(CodecParams& p, size_t at, uint8_t v) { p.bytes[at] = v; }
inline void put_u32(CodecParams& p, size_t at, uint32_t v) { std::memcpy(&p.bytes[at], &v, 4); }
inline void put_f64(CodecParams& p, size_t at, double v) { std::memcpy(&p.bytes[at], &v, 8); }

inline uint8_t get_u8(const CodecParams& p, size_t at) { return p.bytes[at]; }
inline uint32_t get_u32(const CodecParams& p, size_t at) {
  uint32_t v;
  std::memcpy(&v, &p.bytes[at], 4);
  return v;
}
inline double get_f64(const CodecParams& p, size_t at) {
  double v;
  std::memcpy(&v, &p.bytes[at], 8);
  return v;
}

// Throws CorruptStream naming `codec` (its error tag, e.g. "codec:mpc") if a parameter byte from
// `first` on is not zero: a parameter this build does not know.
inline void require_unused_params_zero(const CodecParams& p, size_t first, std::string_view codec) {
  for (size_t at = first; at < p.bytes.size(); ++at) {
    if (p.bytes[at] != 0) {
      throw CorruptStream(
          tagged(std::string(codec), "unknown parameter byte ", at, " in stream header"));
    }
  }
}

}  // namespace hycc::codec
