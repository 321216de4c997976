// Our zfp fixed-accuracy coder (codec/zfp_fixed_accuracy.h, codec/block/zfp_block.h) against
// libzfp, its oracle: for many inputs (random values at every scale, random finite bit patterns,
// zeros, denormals, constant blocks, partial last blocks) and tolerances from 2^-149 to 2^127,
// our stream is bit-identical to libzfp's zfp_stream_set_accuracy stream, libzfp decodes ours
// and we decode libzfp's to identical floats, and garbage decodes alike.
#include <gtest/gtest.h>
#include <zfp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/zfp_fixed_accuracy.h"
#include "common/synthetic_data.h"
#include "zfp_test_inputs.h"

namespace hycc {
namespace {

using codec::zfp::FixedAccuracyReader;
using codec::zfp::FixedAccuracyWriter;
using codec::zfp::kMaxAccuracyBlockBits;

// libzfp with the parameters the codec gives it: zfp_stream_set_accuracy(2^minexp) to encode;
// to decode, the same with at most kMaxAccuracyBlockBits per block (never reached by a valid
// stream; it bounds what garbage makes zfp read).
struct PlainFixedAccuracy {
  PlainFixedAccuracy(int minexp, float* values, size_t count, bool decoding)
      : zfp(zfp_stream_open(nullptr)), field(zfp_field_1d(values, zfp_type_float, count)) {
    zfp_stream_set_accuracy(zfp, std::ldexp(1.0, minexp));
    if (decoding) {
      zfp_stream_set_params(zfp, ZFP_MIN_BITS, kMaxAccuracyBlockBits, ZFP_MAX_PREC, minexp);
    }
  }
  ~PlainFixedAccuracy() {
    zfp_field_free(field);
    zfp_stream_close(zfp);
    if (bits != nullptr) stream_close(bits);
  }
  void attach(void* buffer, size_t bytes) {
    bits = stream_open(buffer, bytes);
    zfp_stream_set_bit_stream(zfp, bits);
    zfp_stream_rewind(zfp);
  }
  zfp_stream* zfp;
  zfp_field* field;
  bitstream* bits = nullptr;
};

size_t max_bytes(size_t count) { return ((count + 3) / 4 * kMaxAccuracyBlockBits + 7) / 8; }

std::vector<uint8_t> libzfp_compress(int minexp, std::vector<float> values) {
  PlainFixedAccuracy z(minexp, values.data(), values.size(), false);
  std::vector<uint64_t> buffer((zfp_stream_maximum_size(z.zfp, z.field) + 7) / 8 + 1);
  z.attach(buffer.data(), buffer.size() * 8);
  const size_t bytes = zfp_compress(z.zfp, z.field);
  const auto* p = reinterpret_cast<const uint8_t*>(buffer.data());
  return {p, p + bytes};
}

std::vector<float> libzfp_decompress(int minexp, std::vector<uint8_t> stream, size_t count) {
  std::vector<float> out(count);
  PlainFixedAccuracy z(minexp, out.data(), count, true);
  stream.resize(stream.size() + max_bytes(count) + 16);  // libzfp reads whole words, unchecked
  z.attach(stream.data(), stream.size());
  EXPECT_NE(zfp_decompress(z.zfp, z.field), 0u);
  return out;
}

std::vector<uint8_t> our_compress(int minexp, const std::vector<float>& values) {
  std::vector<uint8_t> out(max_bytes(values.size()));
  FixedAccuracyWriter writer(reinterpret_cast<std::byte*>(out.data()), minexp);
  for (size_t i = 0; i < values.size(); i += 4) {
    writer.write(values.data() + i, std::min<size_t>(4, values.size() - i));
  }
  out.resize(writer.finish());
  return out;
}

std::vector<float> our_decompress(int minexp, const std::vector<uint8_t>& stream, size_t count,
                                  uint64_t* consumed = nullptr) {
  std::vector<float> out(count);
  FixedAccuracyReader reader(reinterpret_cast<const std::byte*>(stream.data()), stream.size(),
                             minexp);
  for (size_t i = 0; i < count; i += 4) reader.read(out.data() + i, std::min<size_t>(4, count - i));
  if (consumed != nullptr) *consumed = reader.consumed_bytes();
  return out;
}

using zfp_test::inputs;
using zfp_test::same_bits;

class ZfpFixedAccuracyVsLibzfp : public ::testing::TestWithParam<int> {};

TEST_P(ZfpFixedAccuracyVsLibzfp, StreamsAndDecodedValuesAreIdentical) {
  const int minexp = GetParam();
  for (size_t count : {size_t{1}, size_t{3}, size_t{4}, size_t{7}, size_t{1001}}) {
    for (const auto& [name, values] : inputs(count, static_cast<uint64_t>(minexp + 200) + count)) {
      SCOPED_TRACE(name + ", count " + std::to_string(count));
      const std::vector<uint8_t> ours = our_compress(minexp, values);
      const std::vector<uint8_t> theirs = libzfp_compress(minexp, values);
      ASSERT_EQ(ours, theirs);
      uint64_t consumed = 0;
      const std::vector<float> decoded = our_decompress(minexp, theirs, count, &consumed);
      EXPECT_EQ(consumed, theirs.size());
      ASSERT_TRUE(same_bits(decoded, libzfp_decompress(minexp, ours, count)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tolerances, ZfpFixedAccuracyVsLibzfp,
                         ::testing::Values(-1022, -149, -126, -60, -30, -20, -14, -10, -7, -3, 0, 2,
                                           10, 40, 127),
                         [](const auto& param_info) {
                           const int e = param_info.param;
                           return (e < 0 ? "minus" + std::to_string(-e) : std::to_string(e));
                         });

// Random garbage decodes the same way in both (zfp reads any bit pattern as some block), and a
// stream cut short reads zeros past its end and says it consumed more than it had.
TEST(ZfpFixedAccuracy, GarbageDecodesLikeLibzfpAndTruncationShows) {
  std::mt19937_64 rng(5);
  for (int minexp : {-20, -7, 0}) {
    const size_t count = 4001;
    std::vector<uint8_t> garbage(max_bytes(count));
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    EXPECT_TRUE(same_bits(our_decompress(minexp, garbage, count),
                          libzfp_decompress(minexp, garbage, count)))
        << minexp;
    const std::vector<float> values = make_data(DataKind::kGaussian, 1000, 9);
    std::vector<uint8_t> stream = our_compress(minexp, values);
    stream.resize(stream.size() / 2);
    uint64_t consumed = 0;
    our_decompress(minexp, stream, values.size(), &consumed);
    EXPECT_GT(consumed, stream.size()) << minexp;
  }
}

}  // namespace
}  // namespace hycc
