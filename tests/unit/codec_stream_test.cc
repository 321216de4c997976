// The stream layer: buffer sizing, header validation, mismatches, alignment, framing.
#include <gtest/gtest.h>

#include "codec/stream.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

TEST(CodecStream, RejectsTooSmallOutput) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  const CodecConfig c = CodecConfig::parse("none");
  std::vector<std::byte> out(max_compressed_bytes(c, in.view()) - 1);
  EXPECT_THROW(compress(c, in.view(), out), InvalidArgument);
}

TEST(CodecStream, RejectsMismatchedOutput) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  const auto stream = compress(CodecConfig::parse("none"), in.view());
  test::Buffer wrong_count(DType::kF32, 4), wrong_dtype(DType::kBF16, 3);
  EXPECT_THROW(decompress(stream, wrong_count.view()), InvalidArgument);
  EXPECT_THROW(decompress(stream, wrong_dtype.view()), InvalidArgument);
}

TEST(CodecStream, RejectsForeignBytes) {
  std::vector<std::byte> junk(100, std::byte{0x5a});
  test::Buffer out(DType::kF32, 3);
  EXPECT_THROW(inspect(junk), CorruptStream);
  EXPECT_THROW(decompress({}, out.view()), CorruptStream);
}

TEST(CodecStream, HeaderIsFortyEightBytesAndTrailingBytesAreIgnored) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  auto stream = compress(CodecConfig::parse("none"), in.view());
  EXPECT_EQ(stream.size(), kStreamHeaderBytes + 12);
  stream.resize(stream.size() + 5, std::byte{0xff});
  test::Buffer out(DType::kF32, 3);
  decompress(stream, out.view());
  EXPECT_TRUE(out.bits_equal(in));
}

TEST(CodecStream, WorksOnUnalignedStreamBuffers) {
  for (const char* spec : {"none", "bf16", "quant:bits=4", "mpc", "zfp:rate=8", "eb:abs=1e-2"}) {
    const CodecConfig c = CodecConfig::parse(spec);
    // An empty tensor too (a chunk of a short tensor split over more ranks than elements).
    const test::Buffer empty(DType::kF32, 0);
    std::vector<std::byte> room(max_compressed_bytes(c, empty.view()) + 3);
    const size_t header_only = compress(c, empty.view(), std::span(room).subspan(3));
    test::Buffer none(DType::kF32, 0);
    decompress(std::span(room).subspan(3, header_only), none.view());
    const test::Buffer in =
        test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, 1001));
    const auto aligned = compress(c, in.view());
    std::vector<std::byte> storage(max_compressed_bytes(c, in.view()) + 3);
    const std::span<std::byte> odd(storage.data() + 3, storage.size() - 3);
    const size_t n = compress(c, in.view(), odd);
    ASSERT_EQ(n, aligned.size()) << spec;
    EXPECT_TRUE(std::equal(aligned.begin(), aligned.end(), odd.begin())) << spec;
    test::Buffer a(DType::kF32, 1001), b(DType::kF32, 1001);
    decompress(aligned, a.view());
    decompress(odd.first(n), b.view());
    EXPECT_TRUE(a.bits_equal(b)) << spec;
  }
}

TEST(CodecStream, FramesAForeignPayload) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  const CodecConfig c = CodecConfig::parse("none");
  std::vector<std::byte> out(kStreamHeaderBytes + 12);
  const auto* raw = static_cast<const std::byte*>(in.view().data);
  EXPECT_EQ(frame_payload(c, DType::kF32, 3, {raw, 12}, out), out.size());
  EXPECT_EQ(out, compress(c, in.view()));
  EXPECT_THROW(frame_payload(c, DType::kF32, 2, {raw, 12}, out), InvalidArgument);
}

TEST(CodecStream, RejectsPayloadLargerThanTheCodecCanProduce) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  auto stream = compress(CodecConfig::parse("bf16"), in.view());
  stream.resize(stream.size() + 6);
  const uint64_t bigger = 12;
  std::memcpy(stream.data() + 16, &bigger, 8);
  // Valid checksum, but a bf16 payload of 3 elements cannot be 12 bytes.
  codec::reseal_stream(stream);
  test::Buffer out(DType::kF32, 3);
  EXPECT_THROW(decompress(stream, out.view()), CorruptStream);
}

}  // namespace
}  // namespace hycc
