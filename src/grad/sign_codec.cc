#include "grad/sign_codec.h"

#include <cmath>
#include <cstring>

#include "grad/sign_block.h"

namespace hycc::grad {

double sign_abs_sum(std::span<const float> x) {
  double sum = 0;
  double lanes[sign::kLanes];
  for (size_t tile = 0; tile * sign::kTile < x.size(); ++tile) {
    for (double& l : lanes) l = 0;
    const size_t begin = tile * sign::kTile;
    const size_t end = std::min(x.size(), begin + sign::kTile);
    size_t row = begin;
    for (; row + sign::kLanes <= end; row += sign::kLanes) {  // a whole row: every lane
      for (unsigned t = 0; t < sign::kLanes; ++t) lanes[t] += std::fabs(double(x[row + t]));
    }
    for (unsigned t = 0; row + t < end; ++t) lanes[t] += std::fabs(double(x[row + t]));
    sum += sign::tile_sum(lanes);
  }
  return sum;
}

double sign_abs_sum_reference(std::span<const float> x) {
  double sum = 0;
  double lanes[sign::kLanes];
  for (size_t tile = 0; tile < sign::tiles(x.size()); ++tile) {
    for (unsigned t = 0; t < sign::kLanes; ++t)
      lanes[t] = sign::lane_sum(x.data(), x.size(), tile, t);
    sum += sign::tile_sum(lanes);
  }
  return sum;
}

void encode_sign(std::span<const float> x, std::span<uint32_t> out) {
  const float scale = sign::scale_of(sign_abs_sum(x), x.size());
  std::memcpy(&out[0], &scale, sizeof scale);
  const size_t n = x.size();
  size_t w = 0;
  for (; w * 32 + 32 <= n; ++w) {  // whole words: a constant trip count
    uint32_t bits = 0;
    for (uint32_t b = 0; b < 32; ++b) bits |= uint32_t{x[w * 32 + b] >= 0} << b;
    out[1 + w] = bits;
  }
  for (; 1 + w < out.size(); ++w) out[1 + w] = sign::sign_word(x.data(), n, w);
}

void decode_sign(std::span<const uint32_t> in, std::span<float> out) {
  const uint32_t scale_bits = in[0];
  const size_t n = out.size();
  size_t w = 0;
  for (; w * 32 + 32 <= n; ++w) {  // whole words: branch-free, vectorizable
    uint32_t v[32];
    for (uint32_t b = 0; b < 32; ++b) v[b] = scale_bits ^ ((((in[1 + w] >> b) & 1u) ^ 1u) << 31);
    std::memcpy(&out[w * 32], v, sizeof v);
  }
  for (size_t i = w * 32; i < n; ++i)
    out[i] = sign::sign_value(in[1 + w], unsigned(i % 32), scale_bits);
}

}  // namespace hycc::grad
