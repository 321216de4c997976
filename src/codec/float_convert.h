// Bit-exact conversions between binary32, bfloat16 and binary16, round to nearest even.
// NaN stays NaN (quieted, top payload bits kept), infinities and signed zeros are preserved,
// binary16 subnormals are produced and consumed exactly, overflow goes to infinity.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/host_device.h"

namespace hycc::codec {

HYCC_HD inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
HYCC_HD inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

HYCC_HD inline uint16_t f32_bits_to_bf16(uint32_t u) {
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((u >> 16) | 0x0040u) : rounded);
}

HYCC_HD inline uint32_t bf16_to_f32_bits(uint16_t h) { return static_cast<uint32_t>(h) << 16; }

// Branch-free (every path computed, then selected) so that loops over arrays vectorize.
HYCC_HD inline uint16_t f32_bits_to_f16(uint32_t x) {
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  // Normal result: rebias the exponent from 127 to 15, round the 13 dropped bits to nearest even.
  const uint32_t normal = (ax - 0x38000000u + 0x0fffu + ((ax >> 13) & 1u)) >> 13;
  // Subnormal result (|x| < 2^-14): adding 0.5 puts the binary16 subnormal step 2^-24 in the last
  // mantissa bit, so the FPU's round-to-nearest-even does the rounding.
  const uint32_t subnormal = f32_to_bits(bits_to_f32(ax) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);  // quiet, top payload bits kept
  uint32_t r = ax < 0x38800000u ? subnormal : normal;
  r = ax >= 0x477ff000u ? 0x7c00u : r;  // 65520 and above round to infinity
  r = ax > 0x7f800000u ? nan : r;
  return static_cast<uint16_t>(sign | r);
}

HYCC_HD inline uint32_t f16_to_f32_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t shifted = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exp = shifted & 0x0f800000u;
  const uint32_t normal = shifted + 0x38000000u;   // rebias 15 -> 127
  const uint32_t special = shifted + 0x70000000u;  // infinity and NaN: exponent 255
  // Subnormal: m * 2^-24 computed exactly as (2^-14 + m * 2^-24) - 2^-14.
  const uint32_t subnormal = f32_to_bits(bits_to_f32(normal + 0x00800000u) - 6.103515625e-05f);
  const uint32_t r = exp == 0x0f800000u ? special : (exp == 0 ? subnormal : normal);
  return sign | r;
}

HYCC_HD inline float bf16_to_f32(uint16_t h) { return bits_to_f32(bf16_to_f32_bits(h)); }
HYCC_HD inline float f16_to_f32(uint16_t h) { return bits_to_f32(f16_to_f32_bits(h)); }
HYCC_HD inline uint16_t f32_to_bf16(float f) { return f32_bits_to_bf16(f32_to_bits(f)); }
HYCC_HD inline uint16_t f32_to_f16(float f) { return f32_bits_to_f16(f32_to_bits(f)); }

}  // namespace hycc::codec
