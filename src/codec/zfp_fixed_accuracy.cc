#include "codec/zfp_fixed_accuracy.h"

#include <cstring>

namespace hycc::codec::zfp {

void FixedAccuracyWriter::put(int emax, const uint32_t* u) {
  WideBlockBits bits;
  uint32_t left = encode_block_accuracy_integers(emax, u, minexp_, bits, coder_);
  for (uint32_t w = 0; left != 0; ++w) {
    const uint32_t n_bits = left < 64 ? left : 64;
    bits_.append(bits.w[w], n_bits);
    left -= n_bits;
  }
}

void FixedAccuracyWriter::write(const float* values, size_t n) {
  float block[kBlockValues];
  const float* x = values;
  if (n < kBlockValues) {
    std::memcpy(block, values, n * sizeof(float));
    pad_partial_block(block, static_cast<uint32_t>(n));
    x = block;
  }
  uint32_t u[kBlockValues];
  const int emax = block_integers(x, u);
  put(emax, u);
}

void FixedAccuracyWriter::write_blocks(const float* values, size_t blocks) {
  size_t b = 0;
  for (; b + kGroupBlocks <= blocks; b += kGroupBlocks) {
    BlockGroup g;
    group_integers(values + b * kBlockValues, g);
    for (uint32_t j = 0; j < kGroupBlocks; ++j) put(g.emax[j], g.u[j]);
  }
  for (; b < blocks; ++b) write(values + b * kBlockValues, kBlockValues);
}

int FixedAccuracyReader::take(uint32_t* u) {
  WideBlockBits bits;
  load_stream_words<3>(in_, bytes_, pos_, bits.w);
  int emax;
  pos_ += decode_block_accuracy_integers(bits, minexp_, emax, u, coder_);
  return emax;
}

void FixedAccuracyReader::read(float* values, size_t n) {
  uint32_t u[kBlockValues];
  const int emax = take(u);
  float block[kBlockValues];
  block_floats(emax, u, n == kBlockValues ? values : block);
  if (n < kBlockValues) std::memcpy(values, block, n * sizeof(float));
}

void FixedAccuracyReader::read_blocks(float* values, size_t blocks) {
  size_t b = 0;
  for (; b + kGroupBlocks <= blocks; b += kGroupBlocks) {
    BlockGroup g;
    for (uint32_t j = 0; j < kGroupBlocks; ++j) g.emax[j] = take(g.u[j]);
    group_floats(g, values + b * kBlockValues);
  }
  for (; b < blocks; ++b) read(values + b * kBlockValues, kBlockValues);
}

}  // namespace hycc::codec::zfp
