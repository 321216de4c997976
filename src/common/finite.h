// Error-feedback state after a step whose input overflowed (fp16 loss scaling): a residual value
// that is not finite restarts from zero, so that one skipped step does not make every later step
// NaN (docs/gradients.md, "Overflowed steps"). Without branches, so that the loops that store
// residuals keep running at memory speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace hycc {

// All ones where the float with these bits is not finite (exponent all ones), else zero.
inline uint32_t nonfinite_mask(uint32_t bits) {
  return (bits & 0x7f800000u) == 0x7f800000u ? ~0u : 0u;
}

// x, or +0 when x is not finite.
inline float finite_or_zero(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= ~nonfinite_mask(bits);
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

// Sets the values of v that are not finite to +0; returns whether there were any.
inline bool zero_nonfinite(std::span<float> v) {
  bool any = false;
  for (float& x : v) {
    const float y = finite_or_zero(x);
    any |= y != x;  // only a value that is not finite changes (NaN compares unequal)
    x = y;
  }
  return any;
}

}  // namespace hycc
