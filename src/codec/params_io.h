// Little-endian writer/reader of the 16 parameter bytes a codec keeps in the stream header.
#pragma once

#include <cstdint>
#include <cstring>

#include "hycc/codec.h"

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

}  // namespace hycc::codec
