// The rotation of codec "quant" with rotate=hadamard (src/codec/codec_quant.cc), shared by the
// CPU codec and the CUDA kernels. A block of n = 2^L values is multiplied by the Sylvester
// Hadamard matrix H (H_1 = [1], H_2k = [[H_k, H_k], [H_k, -H_k]]; symmetric, H H = n I), which
// spreads an outlier over the whole block, so that the block's range, and with it the
// quantization step, follows the block's typical magnitude rather than its largest value:
//   forward  y = (H x) * 2^-floor(L/2)
//   inverse  x = H (y * 2^-ceil(L/2))
// The butterflies run stage by stage, half-width h = n/2 down to 1 (the order of the recursive
// definition, which the reference implements); within a stage the butterflies are independent,
// so any number of threads computes the same bits. Only sums, differences and exact
// power-of-two scalings: no contraction into FMA can change a result.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"

namespace hycc::codec::quant {

// A block is rotated only where every |x| is below this (NaN and infinities are not): neither the
// forward sums nor the decoder's inverse can then overflow.
inline constexpr float kRotateLimit = 0x1p100f;

HYCC_HD inline bool is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

HYCC_HD inline int log2_of(uint64_t n) {
  int l = 0;
  while ((uint64_t{1} << l) < n) ++l;
  return l;
}

HYCC_HD inline bool rotatable(float v) { return v < kRotateLimit && v > -kRotateLimit; }

HYCC_HD inline bool rotatable(const float* x, size_t n) {
  bool ok = true;
  for (size_t i = 0; i < n; ++i) ok = ok && rotatable(x[i]);
  return ok;
}

// Butterfly t (t < n/2) of the stage of half-width h.
HYCC_HD inline void hadamard_butterfly(float* x, size_t h, size_t t) {
  const size_t i = t / h * 2 * h + t % h;
  const float a = x[i], b = x[i + h];
  x[i] = a + b;
  x[i + h] = a - b;
}

HYCC_HD inline float hadamard_forward_scale(size_t n) {
  return 1.0f / static_cast<float>(1u << (log2_of(n) / 2));
}
HYCC_HD inline float hadamard_inverse_scale(size_t n) {
  return 1.0f / static_cast<float>(1u << (log2_of(n) - log2_of(n) / 2));
}

// Every stage on one thread, its butterflies in memory order (which the compiler vectorizes).
HYCC_HD inline void hadamard_stages(float* x, size_t n) {
  for (size_t h = n / 2; h >= 1; h /= 2) {
    for (size_t i = 0; i < n; i += 2 * h) {
      for (size_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
}

HYCC_HD inline void hadamard_forward(float* x, size_t n) {
  hadamard_stages(x, n);
  const float s = hadamard_forward_scale(n);
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

HYCC_HD inline void hadamard_inverse(float* x, size_t n) {
  const float s = hadamard_inverse_scale(n);
  for (size_t i = 0; i < n; ++i) x[i] *= s;
  hadamard_stages(x, n);
}

}  // namespace hycc::codec::quant
