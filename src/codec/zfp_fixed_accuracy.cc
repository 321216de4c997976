#include "codec/zfp_fixed_accuracy.h"

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
  put_values(values, n, [this](int emax, const uint32_t* u) { put(emax, u); });
}

int FixedAccuracyReader::take(uint32_t* u) {
  WideBlockBits bits;
  load_stream_words<3>(in_, bytes_, pos_, bits.w);
  int emax;
  pos_ += decode_block_accuracy_integers(bits, minexp_, emax, u, coder_);
  return emax;
}

void FixedAccuracyReader::read(float* values, size_t n) {
  take_values(values, n, [this](uint32_t* u) { return take(u); });
}

}  // namespace hycc::codec::zfp
