// A slow, obvious implementation of codec "quant" (layout and rules at the top of
// src/codec/codec_quant.cc): one value at a time, codes placed one bit at a time. It is the
// oracle the tests compare the fast path with, bit for bit, on payloads and decoded values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hycc/dtype.h"

namespace hycc::codec::reference {

struct QuantParams {
  int bits = 8;       // 1..8
  size_t block = 64;  // multiple of 8
  bool stochastic = false;
  bool rotate = false;  // rotate=hadamard: block a power of two
};

// The payload that codec "quant" with these parameters writes for `in` and `seed`.
std::vector<std::byte> quant_encode(const QuantParams& params, ConstTensorView in, uint64_t seed);

// Decodes a payload into `out`; throws CorruptStream where it is malformed.
void quant_decode(const QuantParams& params, std::span<const std::byte> payload, TensorView out);

// The uniform noise in [0, 1) that stochastic rounding adds to element `index` for `seed`.
float quant_noise(uint64_t seed, uint64_t index);

}  // namespace hycc::codec::reference
