// Little-endian integers at any byte address of a payload (the hosts hycc runs on are
// little-endian; memcpy keeps unaligned accesses well-defined).
#pragma once

#include <cstdint>
#include <cstring>

namespace hycc::codec {

inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t load_u64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void store_u32(void* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void store_u64(void* p, uint64_t v) { std::memcpy(p, &v, 8); }

}  // namespace hycc::codec
