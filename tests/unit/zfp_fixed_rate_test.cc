// Our zfp fixed-rate coder (codec/zfp_fixed_rate.h, codec/block/zfp_block.h) against libzfp, its
// oracle: for many inputs (random values at every scale, random finite bit patterns, zeros,
// denormals, magnitudes below 2^-97 where zfp's scale overflows, constant blocks, partial last
// blocks) and every rate zfp distinguishes (bits per block 9..128), our stream is bit-identical
// to libzfp's, libzfp decodes ours and we decode libzfp's to identical floats.
#include <gtest/gtest.h>
#include <zfp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/zfp_fixed_rate.h"
#include "common/synthetic_data.h"
#include "zfp_test_inputs.h"

namespace hycc {
namespace {

using codec::zfp::fixed_rate_bytes;
using codec::zfp::FixedRateReader;
using codec::zfp::FixedRateWriter;

struct PlainFixedRate {
  PlainFixedRate(double rate, float* values, size_t count)
      : zfp(zfp_stream_open(nullptr)), field(zfp_field_1d(values, zfp_type_float, count)) {
    zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false);
  }
  ~PlainFixedRate() {
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

std::vector<uint8_t> libzfp_compress(double rate, std::vector<float> values) {
  PlainFixedRate z(rate, values.data(), values.size());
  std::vector<uint64_t> buffer((zfp_stream_maximum_size(z.zfp, z.field) + 7) / 8 + 1);
  z.attach(buffer.data(), buffer.size() * 8);
  const size_t bytes = zfp_compress(z.zfp, z.field);
  const auto* p = reinterpret_cast<const uint8_t*>(buffer.data());
  return {p, p + bytes};
}

std::vector<float> libzfp_decompress(double rate, std::vector<uint8_t> stream, size_t count) {
  std::vector<float> out(count);
  PlainFixedRate z(rate, out.data(), count);
  stream.resize(stream.size() + 16);  // libzfp reads whole words
  z.attach(stream.data(), stream.size());
  EXPECT_NE(zfp_decompress(z.zfp, z.field), 0u);
  return out;
}

std::vector<uint8_t> our_compress(uint32_t block_bits, const std::vector<float>& values) {
  std::vector<uint8_t> out(fixed_rate_bytes(values.size(), block_bits));
  FixedRateWriter writer(reinterpret_cast<std::byte*>(out.data()), block_bits);
  for (size_t i = 0; i < values.size(); i += 4) {
    writer.write(values.data() + i, std::min<size_t>(4, values.size() - i));
  }
  EXPECT_EQ(writer.finish(), out.size());
  return out;
}

std::vector<float> our_decompress(uint32_t block_bits, const std::vector<uint8_t>& stream,
                                  size_t count) {
  std::vector<float> out(count);
  FixedRateReader reader(reinterpret_cast<const std::byte*>(stream.data()), stream.size(),
                         block_bits);
  for (size_t i = 0; i < count; i += 4) reader.read(out.data() + i, std::min<size_t>(4, count - i));
  EXPECT_EQ(reader.consumed_bytes(), stream.size());
  return out;
}

using zfp_test::inputs;
using zfp_test::same_bits;

TEST(ZfpFixedRate, RateToBlockBitsMatchesLibzfp) {
  for (double rate = 0.125; rate <= 32; rate += 0.125) {
    zfp_stream* zfp = zfp_stream_open(nullptr);
    zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false);
    uint32_t min_bits = 0, max_bits = 0;
    zfp_stream_params(zfp, &min_bits, &max_bits, nullptr, nullptr);
    zfp_stream_close(zfp);
    EXPECT_EQ(codec::zfp::rate_block_bits(rate), max_bits) << rate;
    EXPECT_EQ(min_bits, max_bits);
  }
}

class ZfpFixedRateVsLibzfp : public ::testing::TestWithParam<uint32_t> {};

TEST_P(ZfpFixedRateVsLibzfp, StreamsAndDecodedValuesAreIdentical) {
  const uint32_t block_bits = GetParam();
  const double rate = block_bits / 4.0;
  ASSERT_EQ(codec::zfp::rate_block_bits(rate), block_bits);
  for (size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{7}, size_t{1001}}) {
    for (const auto& [name, values] : inputs(count, block_bits * 31 + count)) {
      SCOPED_TRACE(name + ", count " + std::to_string(count));
      const std::vector<uint8_t> ours = our_compress(block_bits, values);
      const std::vector<uint8_t> theirs = libzfp_compress(rate, values);
      ASSERT_EQ(ours, theirs);
      const std::vector<float> decoded = our_decompress(block_bits, theirs, count);
      ASSERT_TRUE(same_bits(decoded, libzfp_decompress(rate, ours, count)));
    }
  }
}

std::vector<uint32_t> all_block_bits() {
  std::vector<uint32_t> v;
  for (uint32_t b = codec::zfp::kMinBlockBits; b <= codec::zfp::kMaxBlockBits; ++b) v.push_back(b);
  return v;
}

INSTANTIATE_TEST_SUITE_P(EveryRate, ZfpFixedRateVsLibzfp, ::testing::ValuesIn(all_block_bits()),
                         [](const auto& param_info) {
                           return "bits" + std::to_string(param_info.param);
                         });

// The CUDA kernels' data movement (codec/cuda/zfp_kernels.cu), run on the CPU: each warp ORs its
// 32 blocks into a span of block_bits words with or_into_span and writes the span's bytes that
// fall inside the stream, which must give the CPU writer's stream; decoding loads the span and
// takes each block from it, which must give the CPU reader's values.
TEST(ZfpFixedRate, WarpSpanAssemblyGivesTheSameStream) {
  for (uint32_t block_bits = codec::zfp::kMinBlockBits; block_bits <= codec::zfp::kMaxBlockBits;
       ++block_bits) {
    for (size_t count : {size_t{1}, size_t{127}, size_t{128}, size_t{4 * 32 * 3 + 17}}) {
      const std::vector<float> values = make_data(DataKind::kLaplace, count, block_bits);
      const std::vector<uint8_t> expected = our_compress(block_bits, values);
      std::vector<uint8_t> out(expected.size(), 0xee);
      const size_t blocks = (count + 3) / 4;
      for (size_t warp = 0; warp * 32 < blocks; ++warp) {
        std::vector<uint32_t> span(block_bits, 0);
        for (uint32_t lane = 0; lane < 32 && warp * 32 + lane < blocks; ++lane) {
          const size_t begin = (warp * 32 + lane) * 4;
          float x[4];
          const auto n = static_cast<uint32_t>(std::min<size_t>(4, count - begin));
          std::memcpy(x, values.data() + begin, n * 4);
          if (n < 4) codec::zfp::pad_partial_block(x, n);
          codec::zfp::BlockBits bits;
          codec::zfp::encode_block(x, block_bits, bits);
          codec::zfp::or_into_span(bits, lane, block_bits,
                                   [&span](uint32_t w, uint32_t v) { span.at(w) |= v; });
        }
        const size_t span_at = warp * block_bits * 4;
        for (size_t i = 0; i < size_t{block_bits} * 4 && span_at + i < out.size(); ++i) {
          out[span_at + i] = static_cast<uint8_t>(span[i / 4] >> (8 * (i % 4)));
        }
      }
      ASSERT_EQ(out, expected) << "block_bits " << block_bits << ", count " << count;

      // The decoder's mirror: the warp's span loaded from the stream, each lane's block taken
      // from the span's bytes.
      const std::vector<float> decoded = our_decompress(block_bits, expected, count);
      for (size_t warp = 0; warp * 32 < blocks; ++warp) {
        std::vector<uint8_t> span(size_t{block_bits} * 4, 0);
        const size_t span_at = warp * block_bits * 4;
        for (size_t i = 0; i < span.size() && span_at + i < expected.size(); ++i) {
          span[i] = expected[span_at + i];
        }
        for (uint32_t lane = 0; lane < 32 && warp * 32 + lane < blocks; ++lane) {
          const codec::zfp::BlockBits bits = codec::zfp::load_block(
              span.data(), span.size(), uint64_t{lane} * block_bits, block_bits);
          float x[4];
          codec::zfp::decode_block(bits, block_bits, x);
          const size_t begin = (warp * 32 + lane) * 4;
          for (size_t i = 0; i < 4 && begin + i < count; ++i) {
            ASSERT_EQ(std::memcmp(&x[i], &decoded[begin + i], 4), 0) << block_bits << " " << begin;
          }
        }
      }
    }
  }
}

// Random garbage decodes the same way in both (zfp reads any bit pattern as some block).
TEST(ZfpFixedRate, GarbageDecodesLikeLibzfp) {
  std::mt19937_64 rng(3);
  for (uint32_t block_bits : {9u, 17u, 32u, 63u, 64u, 65u, 100u, 128u}) {
    const size_t count = 4001;
    std::vector<uint8_t> garbage(fixed_rate_bytes(count, block_bits));
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    const std::vector<float> ours = our_decompress(block_bits, garbage, count);
    const std::vector<float> theirs = libzfp_decompress(block_bits / 4.0, garbage, count);
    EXPECT_TRUE(same_bits(ours, theirs)) << block_bits;
  }
}

}  // namespace
}  // namespace hycc
