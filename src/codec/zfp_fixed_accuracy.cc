#include "codec/zfp_fixed_accuracy.h"

#include <cstring>

namespace hycc::codec::zfp {

void FixedAccuracyWriter::write(const float* values, size_t n) {
  float block[kBlockValues];
  const float* x = values;
  if (n < kBlockValues) {
    std::memcpy(block, values, n * sizeof(float));
    pad_partial_block(block, static_cast<uint32_t>(n));
    x = block;
  }
  WideBlockBits bits;
  uint32_t left = encode_block_accuracy(x, minexp_, bits, coder_);
  for (uint32_t w = 0; left != 0; ++w) {
    const uint32_t n_bits = left < 64 ? left : 64;
    bits_.append(bits.w[w], n_bits);
    left -= n_bits;
  }
}

void FixedAccuracyReader::read(float* values, size_t n) {
  WideBlockBits bits;
  load_stream_words<3>(in_, bytes_, pos_, bits.w);
  float block[kBlockValues];
  pos_ += decode_block_accuracy(bits, minexp_, n == kBlockValues ? values : block, coder_);
  if (n < kBlockValues) std::memcpy(values, block, n * sizeof(float));
}

}  // namespace hycc::codec::zfp
