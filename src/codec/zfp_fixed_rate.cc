#include "codec/zfp_fixed_rate.h"

#include <cstring>

namespace hycc::codec::zfp {

void FixedRateWriter::put(int emax, const uint32_t* u) {
  BlockBits bits;
  encode_block_integers(emax, u, block_bits_, bits, coder_);
  bits_.append(bits.lo, block_bits_ < 64 ? block_bits_ : 64);
  if (block_bits_ > 64) bits_.append(bits.hi, block_bits_ - 64);
}

void FixedRateWriter::write(const float* values, size_t n) {
  put_values(values, n, [this](int emax, const uint32_t* u) { put(emax, u); });
}

void StreamBitWriter::append(uint64_t bits, uint32_t n) {
  acc_ |= bits << fill_;
  if (fill_ + n < 64) {
    fill_ += n;
    return;
  }
  std::memcpy(out_, &acc_, 8);  // little-endian hosts only, as the stream layer
  out_ += 8;
  const uint32_t used = 64 - fill_;
  acc_ = used < 64 ? bits >> used : 0;
  fill_ = fill_ + n - 64;
}

size_t StreamBitWriter::finish() {
  const uint32_t tail = (fill_ + 7) / 8;
  std::memcpy(out_, &acc_, tail);
  out_ += tail;
  acc_ = 0;
  fill_ = 0;
  return static_cast<size_t>(out_ - begin_);
}

BlockBits FixedRateReader::fetch() const {
  uint64_t w[2];
  load_stream_words<2>(in_, bytes_, pos_, w);
  BlockBits b{w[0], w[1]};
  if (block_bits_ < 64) {
    b.lo &= (uint64_t{1} << block_bits_) - 1;
    b.hi = 0;
  } else if (block_bits_ < 128) {
    b.hi &= (uint64_t{1} << (block_bits_ - 64)) - 1;
  }
  return b;
}

int FixedRateReader::take(uint32_t* u) {
  const BlockBits bits = fetch();
  pos_ += block_bits_;
  return decode_block_integers(bits, block_bits_, u, coder_);
}

void FixedRateReader::read(float* values, size_t n) {
  take_values(values, n, [this](uint32_t* u) { return take(u); });
}

}  // namespace hycc::codec::zfp
