// The "zstd" codec: round trips at every level, the payload is a plain zstd frame, and frames
// that do not match the stream header are rejected.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <string>

#include "codec/stream.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::vector<std::byte> zstd_frame(const void* data, size_t bytes, int level, bool content_size) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::vector<std::byte> frame(ZSTD_compressBound(bytes));
  const size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), data, bytes);
  ZSTD_freeCCtx(cctx);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  frame.resize(n);
  return frame;
}

// Decodes `payload` as a zstd:level=1 stream of `count` f32 elements; returns the error message,
// or "" if it decoded.
std::string decode_error(const std::vector<std::byte>& payload, size_t count) {
  const CodecConfig config = CodecConfig::parse("zstd");
  std::vector<std::byte> stream(kStreamHeaderBytes + payload.size());
  frame_payload(config, DType::kF32, count, payload, stream);
  test::Buffer out(DType::kF32, count);
  try {
    decompress(stream, out.view());
  } catch (const CorruptStream& e) {
    return e.what();
  }
  return "";
}

TEST(ZstdCodec, SpecsAndHelp) {
  EXPECT_EQ(CodecConfig::parse("zstd").spec(), "zstd:level=1");
  EXPECT_EQ(CodecConfig::parse("zstd:level=-7").spec(), "zstd:level=-7");
  EXPECT_EQ(CodecConfig::parse("zstd:level=22").spec(), "zstd:level=22");
  EXPECT_TRUE(CodecConfig::parse("zstd:level=5").lossless());
  for (const char* bad : {"zstd:level=23", "zstd:level=-8", "zstd:level=fast", "zstd:lvl=1"}) {
    try {
      CodecConfig::parse(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("level"), std::string::npos) << e.what();
    }
  }
  EXPECT_NE(codec_help().find("zstd:level=-7..22 (default 1)"), std::string::npos) << codec_help();
}

TEST(ZstdCodec, RoundTripsEveryLevelAndDtype) {
  for (int level : {-7, -1, 0, 1, 3, 9, 19, 22}) {
    const CodecConfig config = CodecConfig::parse("zstd:level=" + std::to_string(level));
    for (DType dtype : kDTypes) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{4097}, size_t{50000}}) {
        const test::Buffer in = test::Buffer::from_floats(dtype, test::data_with_specials(count));
        const auto stream = compress(config, in.view());
        EXPECT_EQ(inspect(stream).spec, config.spec());
        test::Buffer out(dtype, count);
        decompress(stream, out.view());
        EXPECT_TRUE(out.bits_equal(in))
            << config.spec() << " " << dtype_name(dtype) << " n=" << count;
      }
    }
  }
}

TEST(ZstdCodec, HigherLevelsCompressSmoothDataBetter) {
  const test::Buffer in =
      test::Buffer::from_floats(DType::kBF16, make_data(DataKind::kSmooth, 1 << 18));
  auto size_at = [&](int level) {
    return compress(CodecConfig::parse("zstd:level=" + std::to_string(level)), in.view()).size();
  };
  const size_t fast = size_at(-7), normal = size_at(1), strong = size_at(19);
  EXPECT_LT(normal, in.count() * 2);
  EXPECT_LE(normal, fast);
  EXPECT_LE(strong, normal);
}

TEST(ZstdCodec, PayloadIsAPlainZstdFrame) {
  const test::Buffer in =
      test::Buffer::from_floats(DType::kF32, make_data(DataKind::kSmooth, 5000));
  const CodecConfig config = CodecConfig::parse("zstd:level=3");
  const auto stream = compress(config, in.view());
  const auto payload = stream_payload(stream);
  EXPECT_LE(payload.size(), ZSTD_compressBound(in.count() * 4));
  EXPECT_EQ(config.codec().max_payload_bytes(DType::kF32, 5000), ZSTD_compressBound(20000));
  EXPECT_EQ(ZSTD_getFrameContentSize(payload.data(), payload.size()), 20000u);
  std::vector<std::byte> raw(20000);
  EXPECT_EQ(ZSTD_decompress(raw.data(), raw.size(), payload.data(), payload.size()), 20000u);
  EXPECT_EQ(std::memcmp(raw.data(), in.view().data, raw.size()), 0);

  // A frame written by libzstd itself (other level, with a content checksum) decodes too.
  const auto foreign = zstd_frame(in.view().data, 20000, 7, true);
  EXPECT_EQ(decode_error(foreign, 5000), "");
}

TEST(ZstdCodec, RejectsFramesThatDoNotMatchTheHeader) {
  const std::vector<float> values = make_data(DataKind::kGaussian, 1000);
  const auto frame = zstd_frame(values.data(), 4000, 1, true);
  EXPECT_EQ(decode_error(frame, 1000), "");

  // Content size differs from the element count.
  EXPECT_NE(decode_error(frame, 999).find("4000 bytes, expected 3996"), std::string::npos);
  EXPECT_NE(decode_error(frame, 1001).find("expected 4004"), std::string::npos);
  // No content size in the frame header.
  EXPECT_NE(decode_error(zstd_frame(values.data(), 4000, 1, false), 1000).find("content size"),
            std::string::npos);
  // Two frames back to back.
  const auto half = zstd_frame(values.data(), 2000, 1, true);
  auto two = half;
  two.insert(two.end(), half.begin(), half.end());
  EXPECT_NE(decode_error(two, 1000).find("after it"), std::string::npos);
  // A skippable frame: magic 0x184D2A50, length, then bytes zstd ignores.
  std::vector<std::byte> skippable = {std::byte{0x50}, std::byte{0x2A}, std::byte{0x4D},
                                      std::byte{0x18}, std::byte{0},    std::byte{0},
                                      std::byte{0},    std::byte{0}};
  EXPECT_NE(decode_error(skippable, 0).find("skippable"), std::string::npos);
  // Garbage and truncation: libzstd's own error names, tagged.
  const std::vector<std::byte> garbage(64, std::byte{0x42});
  const std::string garbage_error = decode_error(garbage, 16);
  EXPECT_NE(garbage_error.find("[codec:zstd]"), std::string::npos) << garbage_error;
  const size_t zstd_error = ZSTD_findFrameCompressedSize(garbage.data(), garbage.size());
  ASSERT_TRUE(ZSTD_isError(zstd_error));
  EXPECT_NE(garbage_error.find(ZSTD_getErrorName(zstd_error)), std::string::npos) << garbage_error;
  for (size_t cut : {size_t{0}, size_t{3}, size_t{10}, frame.size() / 2, frame.size() - 1}) {
    const std::vector<std::byte> truncated(frame.begin(), frame.begin() + cut);
    EXPECT_NE(decode_error(truncated, 1000), "") << "cut at " << cut;
  }
  // Corrupted content: caught by zstd's structure checks or by the frame checksum.
  auto corrupted = frame;
  corrupted[corrupted.size() / 2] ^= std::byte{0x10};
  corrupted[corrupted.size() - 2] ^= std::byte{0x01};
  EXPECT_NE(decode_error(corrupted, 1000), "");
}

TEST(ZstdCodec, RejectsBadHeaderParameters) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  const auto stream = compress(CodecConfig::parse("zstd:level=-3"), in.view());
  EXPECT_EQ(inspect(stream).spec, "zstd:level=-3");
  test::Buffer out(DType::kF32, 3);
  const std::pair<size_t, uint8_t> bad_bytes[] = {{24, 23}, {24, 0xF8}, {24, 0x80}, {30, 1}};
  for (const auto& [at, value] : bad_bytes) {
    auto bad = stream;
    bad[at] = std::byte{value};
    codec::reseal_stream(bad);
    EXPECT_THROW(decompress(bad, out.view()), CorruptStream) << "byte " << at << " = " << +value;
  }
}

}  // namespace
}  // namespace hycc
