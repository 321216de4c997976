// The per-chunk logic of the sign compressor (grad/method_sign.cc), shared by the host method and
// the device kernels (grad/cuda/sign_kernels.cu), so that both give the same bits.
//
// A chunk of `count` values x is encoded as one float32 scale, the mean of |x|, and one bit per
// value, 1 for x >= 0 (so NaN is 0 and -0 is 1); bit b of word w is value 32 w + b. The sum of
// |x| is taken in double in a fixed order that a GPU block reproduces: the chunk is cut into
// tiles of kTile values; in a tile, lane t (of kLanes) sums the values t, t + kLanes, ... in order
// from 0; the lane sums are added pairwise (lane t += lane t + s, for s = kLanes / 2, ..., 1);
// the tile sums are added in order from 0. scale = float(sum / count).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "codec/float_convert.h"
#include "common/host_device.h"

namespace hycc::grad::sign {

inline constexpr unsigned kLanes = 256;
inline constexpr size_t kTile = size_t{kLanes} * 32;

HYCC_HD inline size_t tiles(size_t count) { return (count + kTile - 1) / kTile; }

// Lane t's sum in tile `tile` of x[0, count).
HYCC_HD inline double lane_sum(const float* x, size_t count, size_t tile, unsigned lane) {
  const size_t end = (tile + 1) * kTile < count ? (tile + 1) * kTile : count;
  double s = 0;
  for (size_t i = tile * kTile + lane; i < end; i += kLanes) s += fabs(static_cast<double>(x[i]));
  return s;
}

// The tile's sum from its kLanes lane sums (which it overwrites).
HYCC_HD inline double tile_sum(double* lanes) {
  for (unsigned s = kLanes / 2; s > 0; s /= 2) {
    for (unsigned t = 0; t < s; ++t) lanes[t] = lanes[t] + lanes[t + s];
  }
  return lanes[0];
}

HYCC_HD inline float scale_of(double sum, size_t count) {
  return count == 0 ? 0.0f : static_cast<float>(sum / static_cast<double>(count));
}

// Words of one encoded chunk of at most `count` values: the scale, then the bits.
HYCC_HD inline size_t chunk_words(size_t count) { return 1 + (count + 31) / 32; }

// Bit word w of x[0, count) (0 past the end).
HYCC_HD inline uint32_t sign_word(const float* x, size_t count, size_t w) {
  uint32_t bits = 0;
  for (uint32_t b = 0; b < 32 && w * 32 + b < count; ++b) bits |= uint32_t{x[w * 32 + b] >= 0} << b;
  return bits;
}

// +scale for bit b of `bits` set, -scale otherwise (the sign bit of the scale flipped).
HYCC_HD inline float sign_value(uint32_t bits, unsigned b, uint32_t scale_bits) {
  return codec::bits_to_f32(scale_bits ^ ((((bits >> b) & 1u) ^ 1u) << 31));
}

// The chunk (of `size`, chunk_range's balanced split of `total`) that holds element i, and its
// offset there.
struct ChunkOf {
  size_t chunk, offset;
};
HYCC_HD inline ChunkOf chunk_of(size_t i, size_t total, size_t size) {
  const size_t base = total / size, rem = total % size;
  const size_t big = rem * (base + 1);  // elements in the first rem chunks of base + 1
  if (i < big) return {i / (base + 1), i % (base + 1)};
  return {rem + (i - big) / base, (i - big) % base};
}

}  // namespace hycc::grad::sign
