// The stream checksum (XXH3, stream.h) and the passes that compute it while coding
// (checksummed_coding.h): chunked streams equal the whole-payload reference bit for bit, and
// corruption anywhere in a chunked payload is caught.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/stream.h"
#include "common/xxh3.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

// Larger than the size from which elementwise codecs code in chunks (256 KiB of payload), and
// not a multiple of a chunk.
constexpr size_t kLargeCount = 300007;

std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// The stream as the format defines it: the whole payload encoded at once, then hashed.
std::vector<std::byte> reference_stream(const CodecConfig& config, ConstTensorView in) {
  std::vector<std::byte> out(max_compressed_bytes(config, in));
  const std::span<std::byte> payload_room = std::span(out).subspan(kStreamHeaderBytes);
  const size_t payload = config.codec().encode(in, payload_room, {});
  codec::StreamHeader h{config.id(), in.dtype, in.count, payload, config.codec().params()};
  codec::write_header(h, codec::payload_checksum(payload_room.first(payload)), out);
  out.resize(kStreamHeaderBytes + payload);
  return out;
}

std::string corrupt_message(std::span<const std::byte> stream, TensorView out) {
  try {
    decompress(stream, out);
  } catch (const CorruptStream& e) {
    return e.what();
  }
  return "no CorruptStream";
}

TEST(StreamChecksum, PiecewiseHashEqualsTheWholeHash) {
  const std::vector<std::byte> data = random_bytes((1 << 20) + 13, 1);
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 8; ++trial) {
    Xxh3Stream hash;
    size_t at = 0;
    while (at < data.size()) {
      const size_t n = std::min<size_t>(data.size() - at, rng() % 70000);
      hash.update(data.data() + at, n);
      at += n;
    }
    EXPECT_EQ(hash.digest(), xxh3(data.data(), data.size())) << trial;
  }
  EXPECT_NE(xxh3(data.data(), data.size()), xxh3(data.data(), data.size() - 1));
  EXPECT_NE(xxh3_seeded(data.data(), 40, 1), xxh3_seeded(data.data(), 40, 2));
}

TEST(StreamChecksum, ChunkedStreamsEqualTheWholePayloadReference) {
  const std::vector<float> values = test::data_with_specials(kLargeCount, 3);
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const test::Buffer in = test::Buffer::from_floats(dtype, values);
    for (const char* spec : {"none", "bf16", "fp16", "quant:bits=8"}) {
      const CodecConfig config = CodecConfig::parse(spec);
      const std::vector<std::byte> stream = compress(config, in.view());
      const std::vector<std::byte> reference = reference_stream(config, in.view());
      ASSERT_EQ(stream.size(), reference.size()) << spec << " " << dtype_name(dtype);
      EXPECT_TRUE(std::equal(stream.begin(), stream.end(), reference.begin()))
          << spec << " " << dtype_name(dtype);
      test::Buffer decoded(dtype, in.count()), expected(dtype, in.count());
      decompress(stream, decoded.view());
      config.codec().decode(std::span(reference).subspan(kStreamHeaderBytes), expected.view());
      EXPECT_TRUE(decoded.bits_equal(expected)) << spec << " " << dtype_name(dtype);
    }
  }
}

TEST(StreamChecksum, ChunkedDecodingCatchesCorruptionAnywhere) {
  const test::Buffer in =
      test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, kLargeCount));
  for (const char* spec : {"none", "bf16"}) {
    const std::vector<std::byte> stream = compress(CodecConfig::parse(spec), in.view());
    const size_t payload = stream.size() - kStreamHeaderBytes;
    for (const size_t at : {kStreamHeaderBytes, kStreamHeaderBytes + payload / 2, stream.size() - 1,
                            size_t{40}, size_t{47}}) {
      std::vector<std::byte> bad = stream;
      bad[at] ^= std::byte{0x10};
      test::Buffer out(DType::kF32, in.count());
      EXPECT_NE(corrupt_message(bad, out.view()).find("checksum mismatch"), std::string::npos)
          << spec << " byte " << at;
      EXPECT_THROW(inspect(bad), CorruptStream);
    }
  }
}

TEST(StreamChecksum, RejectsVersionOneStreamsByName) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  std::vector<std::byte> stream = compress(CodecConfig::parse("none"), in.view());
  EXPECT_EQ(static_cast<int>(stream[3]), codec::kStreamVersion);
  stream[3] = std::byte{1};
  test::Buffer out(DType::kF32, 3);
  EXPECT_NE(corrupt_message(stream, out.view()).find("version 1 is no longer read"),
            std::string::npos);
  stream[3] = std::byte{9};
  EXPECT_NE(corrupt_message(stream, out.view()).find("unsupported stream version 9"),
            std::string::npos);
}

}  // namespace
}  // namespace hycc
