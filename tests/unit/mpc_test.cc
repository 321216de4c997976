// The "mpc" codec: fast path against the reference, exhaustive round trips of every 16-bit and
// every 32-bit pattern, compression on smooth data, and malformed payloads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>

#include "codec/mpc_reference.h"
#include "codec/stream.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::vector<std::byte> encode(const Codec& codec, ConstTensorView in) {
  std::vector<std::byte> payload(codec.max_payload_bytes(in.dtype, in.count) + 8);
  payload.resize(codec.encode(in, payload, {}));
  return payload;
}

// Decodes through an 8-byte aligned copy, as the stream layer hands payloads to codecs.
void decode(const Codec& codec, const std::vector<std::byte>& payload, TensorView out) {
  std::vector<uint64_t> aligned((payload.size() + 7) / 8);
  if (!payload.empty()) std::memcpy(aligned.data(), payload.data(), payload.size());
  codec.decode({reinterpret_cast<const std::byte*>(aligned.data()), payload.size()}, out);
}

std::string error_of(const Codec& codec, const std::vector<std::byte>& payload, TensorView out) {
  try {
    decode(codec, payload, out);
  } catch (const CorruptStream& e) {
    return e.what();
  }
  return "";
}

std::vector<std::byte> words_to_bytes(const std::vector<uint32_t>& words) {
  std::vector<std::byte> bytes(words.size() * 4);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

// Inputs of several kinds: smooth (many zero bit planes), gaussian with special values, and
// random bit patterns (NaN payloads, denormals, everything).
test::Buffer make_input(DType dtype, size_t count, int kind) {
  if (kind == 0) return test::Buffer::from_floats(dtype, make_data(DataKind::kSmooth, count));
  if (kind == 1) return test::Buffer::from_floats(dtype, test::data_with_specials(count));
  test::Buffer b(dtype, count);
  auto* bytes = static_cast<uint8_t*>(b.data());
  for (size_t i = 0; i < count * dtype_size(dtype); ++i) {
    bytes[i] = static_cast<uint8_t>(splitmix64(i));
  }
  return b;
}

TEST(MpcSpec, CanonicalFormAndParameters) {
  EXPECT_EQ(CodecConfig::parse("mpc").spec(), "mpc:dim=1");
  EXPECT_EQ(CodecConfig::parse("mpc:dim=1").spec(), "mpc:dim=1");
  EXPECT_EQ(CodecConfig::parse("mpc:dim=64").spec(), "mpc:dim=64");
  EXPECT_TRUE(CodecConfig::parse("mpc:dim=3").lossless());
  for (const char* bad : {"mpc:dim=0", "mpc:dim=65", "mpc:dim=-1", "mpc:dim=two", "mpc:stride=2"}) {
    try {
      CodecConfig::parse(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("dim"), std::string::npos) << e.what();
    }
  }
  EXPECT_NE(codec_help().find("mpc:dim=1..64 (default 1)"), std::string::npos) << codec_help();
}

TEST(MpcReference, FastPathMatchesReferenceBitForBit) {
  for (DType dtype : kDTypes) {
    for (int dim : {1, 2, 3, 7}) {
      const CodecConfig config = CodecConfig::parse("mpc:dim=" + std::to_string(dim));
      for (size_t count : {0, 1, 31, 32, 33, 127, 128, 129, 300, 4097}) {
        for (int kind = 0; kind < 3; ++kind) {
          SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " dim=" << dim
                                          << " count=" << count << " kind=" << kind);
          const test::Buffer in = make_input(dtype, count, kind);
          const auto fast = encode(config.codec(), in.view());
          const auto reference = codec::reference::mpc_encode(in.view(), dim);
          ASSERT_EQ(fast, reference);
          EXPECT_LE(fast.size(), config.codec().max_payload_bytes(dtype, count));

          test::Buffer out_fast(dtype, count), out_reference(dtype, count);
          decode(config.codec(), fast, out_fast.view());
          codec::reference::mpc_decode(reference, out_reference.view(), dim);
          EXPECT_TRUE(out_fast.bits_equal(in));
          EXPECT_TRUE(out_reference.bits_equal(in));
        }
      }
    }
  }
}

// Words whose mapped deltas are all ones: every bit plane of every group is non-zero.
TEST(MpcReference, WorstCaseReachesMaxPayloadExactly) {
  for (DType dtype : kDTypes) {
    for (size_t count : {1, 17, 32, 33, 100}) {
      test::Buffer in(dtype, count);
      // Mapped delta 0xFF..F is the delta 0x80..0 (the map keeps the sign and flips the rest),
      // so words alternate between 0 and 0x80..0.
      for (size_t i = 0; i < count; ++i) {
        if (dtype == DType::kF32) {
          static_cast<uint32_t*>(in.data())[i] = i % 2 == 0 ? 0x80000000u : 0;
        } else {
          static_cast<uint16_t*>(in.data())[i] = i % 2 == 0 ? 0x8000 : 0;
        }
      }
      const CodecConfig config = CodecConfig::parse("mpc");
      const Codec& codec = config.codec();
      const auto payload = encode(codec, in.view());
      EXPECT_EQ(payload.size(), codec.max_payload_bytes(dtype, count))
          << dtype_name(dtype) << " count " << count;
      test::Buffer out(dtype, count);
      decode(codec, payload, out.view());
      EXPECT_TRUE(out.bits_equal(in));
    }
  }
}

TEST(MpcReference, MaxPayloadBytes) {
  const CodecConfig config = CodecConfig::parse("mpc");
  const Codec& codec = config.codec();
  EXPECT_EQ(codec.max_payload_bytes(DType::kF32, 0), 0u);
  EXPECT_EQ(codec.max_payload_bytes(DType::kF32, 1), 33u * 4);
  EXPECT_EQ(codec.max_payload_bytes(DType::kF32, 32), 33u * 4);
  EXPECT_EQ(codec.max_payload_bytes(DType::kF32, 33), 2u * 33 * 4);
  EXPECT_EQ(codec.max_payload_bytes(DType::kBF16, 16), 17u * 2);
  EXPECT_EQ(codec.max_payload_bytes(DType::kF16, 17), 2u * 17 * 2);
}

// Every 16-bit pattern, in several orders and with several strides, through the whole stream.
TEST(MpcExhaustive, All16BitPatterns) {
  constexpr size_t kCount = 65536;
  std::vector<std::vector<uint16_t>> orders(4, std::vector<uint16_t>(kCount));
  for (size_t i = 0; i < kCount; ++i) {
    orders[0][i] = static_cast<uint16_t>(i);
    orders[1][i] = static_cast<uint16_t>(kCount - 1 - i);
    orders[2][i] = static_cast<uint16_t>(i * 40503u);  // odd: a permutation
  }
  orders[3] = orders[0];
  std::shuffle(orders[3].begin(), orders[3].end(), std::mt19937(5));
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    for (int dim : {1, 2, 5, 64}) {
      const CodecConfig config = CodecConfig::parse("mpc:dim=" + std::to_string(dim));
      for (size_t o = 0; o < orders.size(); ++o) {
        SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " dim=" << dim << " order " << o);
        test::Buffer in(dtype, kCount);
        std::memcpy(in.data(), orders[o].data(), kCount * 2);
        const auto stream = compress(config, in.view());
        test::Buffer out(dtype, kCount);
        decompress(stream, out.view());
        EXPECT_TRUE(out.bits_equal(in));
        EXPECT_EQ(
            std::vector<std::byte>(stream_payload(stream).begin(), stream_payload(stream).end()),
            codec::reference::mpc_encode(in.view(), dim));
      }
    }
  }
}

// Every 32-bit pattern exactly once, 2^22 at a time on up to four threads. Values are a
// bijection of the index, x ^ (x >> 15) with x = i * odd, so consecutive deltas vary. Release
// builds take seconds; the sanitizer run skips MpcExhaustive*.
TEST(MpcExhaustive, All32BitPatterns) {
  constexpr size_t kChunk = size_t{1} << 22;
  constexpr size_t kChunks = (uint64_t{1} << 32) / kChunk;
  const CodecConfig config = CodecConfig::parse("mpc");
  const Codec& codec = config.codec();
  std::atomic<size_t> mismatched_chunks{0};
  auto check_chunks = [&](size_t first, size_t stride) {
    test::Buffer in(DType::kF32, kChunk), out(DType::kF32, kChunk);
    std::vector<std::byte> payload(codec.max_payload_bytes(DType::kF32, kChunk));
    auto* words = static_cast<uint32_t*>(in.data());
    for (size_t chunk = first; chunk < kChunks; chunk += stride) {
      const auto begin = static_cast<uint32_t>(chunk * kChunk);
      for (uint32_t i = 0; i < kChunk; ++i) {
        const uint32_t x = (begin + i) * 0x9E3779B1u;
        words[i] = x ^ (x >> 15);
      }
      const size_t n = codec.encode(in.view(), payload, {});
      codec.decode(std::span<const std::byte>(payload).first(n), out.view());
      if (!out.bits_equal(in)) ++mismatched_chunks;
    }
  };
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(check_chunks, t, threads);
  check_chunks(0, threads);
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(mismatched_chunks.load(), 0u);
}

TEST(MpcRatio, SmoothDataCompressesGaussianStaysNearOne) {
  constexpr size_t kCount = size_t{1} << 20;
  const CodecConfig config = CodecConfig::parse("mpc");
  // Measured: smooth 1.56 (f32), 3.97 (bf16), 2.34 (f16); gaussian 0.97 (f32), 0.94 (16-bit).
  const double smooth_floor[] = {1.4, 3.0, 2.0};
  for (size_t d = 0; d < 3; ++d) {
    const DType dtype = kDTypes[d];
    const test::Buffer smooth =
        test::Buffer::from_floats(dtype, make_data(DataKind::kSmooth, kCount));
    const test::Buffer gaussian =
        test::Buffer::from_floats(dtype, make_data(DataKind::kGaussian, kCount));
    const double raw = static_cast<double>(kCount * dtype_size(dtype));
    const double smooth_ratio =
        raw / static_cast<double>(encode(config.codec(), smooth.view()).size());
    const double gaussian_ratio =
        raw / static_cast<double>(encode(config.codec(), gaussian.view()).size());
    EXPECT_GT(smooth_ratio, smooth_floor[d]) << dtype_name(dtype);
    EXPECT_GT(gaussian_ratio, 0.9) << dtype_name(dtype);
    EXPECT_LT(gaussian_ratio, 1.1) << dtype_name(dtype);
  }
}

TEST(MpcRatio, StrideFollowsInterleavedData) {
  // Two interleaved channels of very different scale: only dim=2 takes deltas within a channel.
  constexpr size_t kCount = size_t{1} << 16;
  const std::vector<float> a = make_data(DataKind::kSmooth, kCount / 2, 1);
  std::vector<float> v(kCount);
  for (size_t i = 0; i < kCount / 2; ++i) {
    v[2 * i] = a[i];
    v[2 * i + 1] = 1e6f + a[i] * 1e3f;
  }
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, v);
  const size_t dim1 = encode(CodecConfig::parse("mpc:dim=1").codec(), in.view()).size();
  const size_t dim2 = encode(CodecConfig::parse("mpc:dim=2").codec(), in.view()).size();
  EXPECT_LT(dim2, dim1);
}

TEST(MpcMalformed, RejectsTruncatedAndOverlongPayloads) {
  const CodecConfig config = CodecConfig::parse("mpc");
  const Codec& codec = config.codec();
  for (DType dtype : kDTypes) {
    const test::Buffer in = make_input(dtype, 100, 1);
    const auto payload = encode(codec, in.view());
    test::Buffer out(dtype, 100);
    for (size_t cut = 0; cut < payload.size(); ++cut) {
      const std::vector<std::byte> truncated(payload.begin(), payload.begin() + cut);
      EXPECT_FALSE(error_of(codec, truncated, out.view()).empty()) << "cut at " << cut;
    }
    for (size_t extra : {1, 2, 4, 8}) {
      auto longer = payload;
      for (size_t i = 0; i < extra; ++i) longer.push_back(std::byte{0});
      EXPECT_FALSE(error_of(codec, longer, out.view()).empty()) << extra << " extra bytes";
    }
    test::Buffer empty(dtype, 0);
    EXPECT_FALSE(error_of(codec, payload, empty.view()).empty());
    decode(codec, {}, empty.view());  // no elements, no bytes: valid
  }
}

TEST(MpcMalformed, RejectsInconsistentGroups) {
  const CodecConfig config = CodecConfig::parse("mpc");
  const Codec& codec = config.codec();
  test::Buffer out(DType::kF32, 33);
  // Group 0: empty bitmap (32 zero deltas). Group 1 holds element 32 only.
  const std::vector<uint32_t> valid = {0, 1, 5};  // plane 0 = 0b101: element 32 and padding 34
  EXPECT_NE(error_of(codec, words_to_bytes(valid), out.view()).find("padding"), std::string::npos);
  const std::vector<uint32_t> ok = {0, 1, 1};
  EXPECT_EQ(error_of(codec, words_to_bytes(ok), out.view()), "");
  // A bitmap that announces more words than the payload holds.
  const std::vector<uint32_t> overlong = {0xFFFFFFFFu, 1, 1, 1};
  EXPECT_NE(error_of(codec, words_to_bytes(overlong), out.view()).find("announces"),
            std::string::npos);
  // A present plane that is zero: the encoder would have dropped it.
  const std::vector<uint32_t> zero_plane = {0, 3, 1, 0};
  EXPECT_NE(error_of(codec, words_to_bytes(zero_plane), out.view()).find("zero word"),
            std::string::npos);
  // Not a whole number of words.
  std::vector<std::byte> odd = words_to_bytes(ok);
  odd.pop_back();
  EXPECT_FALSE(error_of(codec, odd, out.view()).empty());
}

TEST(MpcMalformed, RejectsBadHeaderParameters) {
  const test::Buffer in = make_input(DType::kF32, 10, 1);
  const auto stream = compress(CodecConfig::parse("mpc:dim=3"), in.view());
  test::Buffer out(DType::kF32, 10);
  const std::pair<size_t, uint8_t> bad_bytes[] = {{24, 0}, {24, 65}, {25, 1}, {39, 1}};
  for (const auto& [at, value] : bad_bytes) {
    auto bad = stream;
    bad[at] = std::byte{value};
    codec::reseal_stream(bad);
    EXPECT_THROW(decompress(bad, out.view()), CorruptStream) << "byte " << at << " = " << +value;
  }
  decompress(stream, out.view());
  EXPECT_TRUE(out.bits_equal(in));
  EXPECT_EQ(inspect(stream).spec, "mpc:dim=3");
}

// Random payloads: rejected, or decoded into something that encodes back to the same bytes
// (the decoder accepts exactly the encoder's payloads). Never out of bounds (sanitizers).
TEST(MpcMalformed, RandomPayloadsAreRejectedOrCanonical) {
  std::mt19937 rng(11);
  size_t accepted = 0;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const CodecConfig config = CodecConfig::parse("mpc:dim=2");
    const Codec& codec = config.codec();
    for (int trial = 0; trial < 3000; ++trial) {
      const size_t count = rng() % 70;
      std::vector<std::byte> payload((rng() % 40) * dtype_size(dtype));
      // Sparse bits so that bitmaps and planes sometimes agree.
      for (auto& b : payload) b = std::byte(rng() % 4 == 0 ? rng() : 0);
      test::Buffer out(dtype, count);
      try {
        decode(codec, payload, out.view());
      } catch (const CorruptStream&) {
        continue;
      }
      ++accepted;
      EXPECT_EQ(encode(codec, out.view()), payload);
      EXPECT_EQ(codec::reference::mpc_encode(out.view(), 2), payload);
    }
  }
  EXPECT_GT(accepted, 0u);
}

TEST(MpcMalformed, ReferenceRejectsWhatTheFastPathRejects) {
  std::mt19937 rng(12);
  const CodecConfig config = CodecConfig::parse("mpc");
  const Codec& codec = config.codec();
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t count = rng() % 70;
    std::vector<std::byte> payload((rng() % 40) * 4);
    for (auto& b : payload) b = std::byte(rng() % 4 == 0 ? rng() : 0);
    test::Buffer fast(DType::kF32, count), reference(DType::kF32, count);
    const bool fast_ok = error_of(codec, payload, fast.view()).empty();
    bool reference_ok = true;
    try {
      codec::reference::mpc_decode(payload, reference.view(), 1);
    } catch (const CorruptStream&) {
      reference_ok = false;
    }
    ASSERT_EQ(fast_ok, reference_ok) << "trial " << trial;
    if (fast_ok) {
      EXPECT_TRUE(fast.bits_equal(reference));
    }
  }
}

}  // namespace
}  // namespace hycc
