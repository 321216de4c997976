// The device decomposition of "zfp:accuracy=T" (fixed accuracy, tolerance 2^minexp) for the plain
// layout (every value finite; tensors with NaN or infinities take the host path): per-block
// stages of the CUDA kernels (src/codec/cuda/zfp_accuracy_kernels.cu), each a function of a block
// index, so that a plain loop over the blocks (tests/unit/zfp_accuracy_stages_test.cc) runs
// exactly what the kernels run. The per-block coder is codec/block/zfp_block.h's, the one the CPU
// codec runs, so the stream is the CPU's (and libzfp's) bit for bit.
//
// Encoding:
//   1. encode: per block, its bits into a slot of 192 bits and its size (1..140 bits), non-finite
//      values counted;
//   2. an exclusive scan of the sizes gives every block its bit offset;
//   3. compact: per block, its bits ORed into the stream's 64-bit words at its offset (blocks
//      share words: the words start zeroed and the ORs are atomic).
// Decoding:
//   1. walk: every block's bit offset, by the parallel walk of codec/block/chain_walk.h over
//      AccuracyChain (a block's size is known only by decoding it); the walk also tells the
//      bitstream's length, and a payload of exactly that many bytes is plain, any other goes to
//      the host (exceptions, raw layout, or malformed);
//   2. decode: per block, its values at their place.
#pragma once

#include <cstdint>

#include "codec/block/zfp_block.h"
#include "codec/float_convert.h"
#include "common/host_device.h"
#include "hycc/dtype.h"

namespace hycc::codec::zfp {

struct AccuracyInput {
  const void* in = nullptr;
  DType dtype = DType::kF32;
  uint64_t count = 0;
  int minexp = 0;

  HYCC_HD uint64_t blocks() const { return (count + kBlockValues - 1) / kBlockValues; }
};

HYCC_HD inline float load_value(const void* in, DType dtype, uint64_t i) {
  if (dtype == DType::kF32) return static_cast<const float*>(in)[i];
  const uint16_t h = static_cast<const uint16_t*>(in)[i];
  return dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// Encoding, stage 1: returns the number of non-finite values of block b (then the payload is not
// valid and the caller takes the host path).
HYCC_HD inline uint32_t accuracy_encode_stage(const AccuracyInput& g, uint64_t b,
                                              WideBlockBits* slots, uint64_t* sizes) {
  const uint64_t begin = b * kBlockValues;
  const uint32_t n =
      g.count - begin < kBlockValues ? static_cast<uint32_t>(g.count - begin) : kBlockValues;
  float x[kBlockValues] = {};
  uint32_t non_finite = 0;
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = load_value(g.in, g.dtype, begin + i);
    if ((f32_to_bits(x[i]) & 0x7f800000u) == 0x7f800000u) ++non_finite;
  }
  if (n < kBlockValues) pad_partial_block(x, n);
  slots[b] = WideBlockBits{};
  sizes[b] = non_finite == 0 ? encode_block_accuracy(x, g.minexp, slots[b]) : 0;
  return non_finite;
}

// Encoding, stage 3: block b's bits ORed into the stream at bit offsets[b]: or_word(i, v) ORs v
// into 64-bit word i (bit j of the stream is bit j % 64 of word j / 64, little-endian: the
// stream's bytes).
template <class OrWord>
HYCC_HD inline void accuracy_compact_stage(const WideBlockBits* slots, const uint64_t* offsets,
                                           const uint64_t* sizes, uint64_t b, OrWord or_word) {
  const uint64_t at = offsets[b];
  const uint32_t shift = static_cast<uint32_t>(at % 64);
  for (uint32_t k = 0; k < 3 && 64 * k < sizes[b]; ++k) {
    const uint64_t v = slots[b].w[k];
    if (v == 0) continue;
    or_word(at / 64 + k, v << shift);
    // The bits shifted out land in the next word (zero past the block's end).
    if (shift != 0 && (v >> (64 - shift)) != 0) or_word(at / 64 + k + 1, v >> (64 - shift));
  }
}

// The 192 bits of a stream of `bytes` bytes from bit `pos` on, as the CPU reader loads them
// (zeros past the end).
HYCC_HD inline WideBlockBits load_wide(const uint8_t* stream, uint64_t bytes, uint64_t pos) {
  WideBlockBits w;
  for (uint32_t k = 0; k < 3; ++k) w.w[k] = load_bits(stream, bytes, pos + 64 * k, 64);
  return w;
}

// Result of the walk: where the last block ends (bits), or that a block runs past the payload.
struct AccuracyWalk {
  uint64_t end = 0;
  bool past_end = false;
};

// The blocks of a payload as a chain for the parallel walk (units: bits).
struct AccuracyChain {
  using Result = AccuracyWalk;
  static constexpr uint32_t kChunk = 16384;
  const uint8_t* payload = nullptr;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  int minexp = 0;

  HYCC_HD uint64_t units() const { return bytes * 8; }
  HYCC_HD uint64_t records() const { return blocks; }
  HYCC_HD uint32_t longest() const { return kMaxAccuracyBlockBits; }
  HYCC_HD uint32_t block_bits(uint64_t pos) const {
    float x[kBlockValues];
    return decode_block_accuracy(load_wide(payload, bytes, pos), minexp, x);
  }
  // A block that runs past the payload is "malformed" here: the stream is not plain.
  HYCC_HD uint32_t record_units(uint64_t pos) const {
    const uint32_t n = block_bits(pos);
    return pos + n <= units() ? n : 0;
  }
  // The reference: offsets[b] of blocks first.. from bit pos on, stopping at a block that runs
  // past the payload.
  HYCC_HD AccuracyWalk walk_from(uint64_t first, uint64_t pos, uint64_t* offsets) const {
    AccuracyWalk r;
    r.end = pos;
    for (uint64_t b = first; b < blocks; ++b) {
      const uint32_t n = block_bits(r.end);
      if (r.end + n > units()) {
        r.past_end = true;
        return r;
      }
      offsets[b] = r.end;
      r.end += n;
    }
    return r;
  }
  HYCC_HD uint64_t offset(uint64_t pos) const { return pos; }
};

// Decoding, stage 2: block b at bit offsets[b] into out (its values below count, in out's dtype).
HYCC_HD inline void accuracy_decode_stage(const AccuracyChain& c, const uint64_t* offsets,
                                          uint64_t b, void* out, DType dtype, uint64_t count) {
  float x[kBlockValues];
  decode_block_accuracy(load_wide(c.payload, c.bytes, offsets[b]), c.minexp, x);
  const uint64_t begin = b * kBlockValues;
  for (uint32_t i = 0; i < kBlockValues && begin + i < count; ++i) {
    if (dtype == DType::kF32) {
      static_cast<float*>(out)[begin + i] = x[i];
    } else {
      static_cast<uint16_t*>(out)[begin + i] =
          dtype == DType::kBF16 ? f32_to_bf16(x[i]) : f32_to_f16(x[i]);
    }
  }
}

}  // namespace hycc::codec::zfp
