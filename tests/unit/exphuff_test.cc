// The "exphuff" codec: the fast coder against the reference (same payload bytes, same decoded
// bits), every block mode, every 16-bit pattern, the Huffman code construction, and malformed
// payloads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "codec/block/exp_huffman.h"
#include "codec/byte_io.h"
#include "codec/exphuff_plan.h"
#include "codec/exphuff_reference.h"
#include "codec/exphuff_table.h"
#include "codec/stream.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

using codec::exphuff::BlockMode;

std::string name(DType d) { return std::string(dtype_name(d)); }

test::Buffer random_bits(DType dtype, size_t count, uint64_t seed) {
  test::Buffer b(dtype, count);
  std::mt19937_64 rng(seed);
  auto* bytes = static_cast<uint8_t*>(b.data());
  for (size_t i = 0; i < count * dtype_size(dtype); ++i) bytes[i] = static_cast<uint8_t>(rng());
  return b;
}

// Inputs that reach every block mode: constant exponents, few, many, random bits (raw), tiny
// values and the special values.
std::vector<std::pair<std::string, test::Buffer>> inputs(DType dtype, size_t count) {
  std::vector<std::pair<std::string, test::Buffer>> out;
  out.emplace_back("gaussian", test::Buffer::from_floats(
                                   dtype, make_data(DataKind::kGaussian, count, count + 1)));
  out.emplace_back("laplace",
                   test::Buffer::from_floats(dtype, make_data(DataKind::kLaplace, count, 2)));
  out.emplace_back("specials", test::Buffer::from_floats(dtype, test::data_with_specials(count)));
  out.emplace_back("random bits", random_bits(dtype, count, count));
  std::vector<float> constant_exponent(count), tiny(count);
  for (size_t i = 0; i < count; ++i) {
    constant_exponent[i] = 1.0f + static_cast<float>(i % 100) / 128.0f;  // exponent 0 (biased 127)
    tiny[i] = static_cast<float>(i % 9) * 1e-41f;
  }
  out.emplace_back("constant exponent", test::Buffer::from_floats(dtype, constant_exponent));
  out.emplace_back("tiny", test::Buffer::from_floats(dtype, tiny));
  return out;
}

std::vector<BlockMode> modes_of(std::span<const std::byte> payload, size_t blocks) {
  std::vector<BlockMode> modes;
  for (size_t b = 0; b < blocks; ++b) {
    modes.push_back(static_cast<BlockMode>(payload[8 * b + 4]));
  }
  return modes;
}

TEST(ExpHuff, FastCoderEqualsTheReference) {
  std::set<BlockMode> seen;
  for (const DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (const size_t block : {size_t{256}, size_t{16384}}) {
      const CodecConfig config = CodecConfig::parse("exphuff:block=" + std::to_string(block));
      for (const size_t count : {0, 1, 7, 255, 256, 257, 1000, 16387, 70000}) {
        for (const auto& [kind, in] : inputs(dtype, count)) {
          const std::string what =
              detail::concat(kind, ", ", name(dtype), ", ", count, " values, block ", block);
          const std::vector<std::byte> stream = compress(config, in.view());
          const std::span<const std::byte> payload = stream_payload(stream);
          const std::vector<std::byte> reference =
              codec::reference::exphuff_encode(in.view(), block);
          ASSERT_EQ(payload.size(), reference.size()) << what;
          EXPECT_TRUE(std::equal(payload.begin(), payload.end(), reference.begin())) << what;
          test::Buffer fast(dtype, count), slow(dtype, count);
          decompress(stream, fast.view());
          codec::reference::exphuff_decode(reference, slow.view(), block);
          EXPECT_TRUE(fast.bits_equal(in)) << what;
          EXPECT_TRUE(slow.bits_equal(in)) << what;
          for (const BlockMode m : modes_of(payload, (count + block - 1) / block)) seen.insert(m);
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), 3u) << "not every block mode occurred";
}

// The device coder's steps (codec/cuda/exphuff_kernels.cu) replayed on the CPU: split in groups
// of 8 with per-stream counts, the host's plan, one writer per stream; decoding from the checked
// directory and heads, a table per block and one reader per stream, then the join.
template <typename Word>
std::vector<std::byte> replay_device_encoder(ConstTensorView in, size_t block) {
  namespace e = codec::exphuff;
  const e::Fields f = e::fields_of(in.dtype);
  const e::PayloadLayout layout(in.count, block, f);
  std::vector<uint8_t> exps(in.count), out(layout.exponents_at + in.count);
  std::vector<uint32_t> histograms(layout.blocks * e::kStreams * 256);
  for (size_t g = 0; g * e::kGroup < in.count; ++g) {
    e::split_group(static_cast<const Word*>(in.data), in.count, g, f, exps.data(),
                   out.data() + layout.rest_at);
  }
  for (size_t i = 0; i < in.count; ++i) {
    const size_t b = i / block, n = std::min(block, in.count - b * block);
    const size_t k = (i - b * block) / e::stream_elements(n);
    ++histograms[(b * e::kStreams + k) * 256 + exps[i]];
  }
  const e::DevicePlan plan = e::plan_encoding(histograms.data(), in.count, block, f);
  std::copy(plan.directory.begin(), plan.directory.end(), out.begin());
  for (size_t b = 0; b < layout.blocks; ++b) {
    const size_t n = std::min(block, in.count - b * block);
    const auto mode = static_cast<BlockMode>(plan.directory[8 * b + 4]);
    const size_t head = f.table_bytes() + e::kStreamSizesBytes;
    if (mode == BlockMode::kHuffman) {
      std::copy_n(&plan.heads[b * e::kHeadStride], head, &out[plan.section_at[b]]);
    }
    for (int k = 0; k < e::kStreams; ++k) {
      const uint8_t* x = &exps[b * block + e::stream_first(n, k)];
      const size_t m = e::stream_count(n, k);
      if (mode == BlockMode::kRaw)
        std::copy_n(x, m, &out[plan.section_at[b] + x - &exps[b * block]]);
      if (mode == BlockMode::kHuffman) {
        e::put_stream(x, m, &plan.codes[b * 256], &out[plan.streams[b * e::kStreams + k].at]);
      }
    }
  }
  out.resize(plan.payload_bytes);
  const auto* bytes = reinterpret_cast<const std::byte*>(out.data());
  return {bytes, bytes + out.size()};
}

template <typename Word>
void replay_device_decoder(std::span<const std::byte> payload_span, size_t block, TensorView out) {
  namespace e = codec::exphuff;
  const e::Fields f = e::fields_of(out.dtype);
  const e::PayloadLayout layout(out.count, block, f);
  const auto* payload = reinterpret_cast<const uint8_t*>(payload_span.data());
  std::vector<uint64_t> section_at =
      e::check_directory(payload, payload_span.size(), out.count, block, f);
  std::vector<uint8_t> heads(layout.blocks * e::kHeadStride), exps(out.count);
  for (size_t b = 0; b < layout.blocks; ++b) {
    if (static_cast<BlockMode>(payload[8 * b + 4]) != BlockMode::kHuffman) continue;
    const size_t bytes =
        std::min<size_t>(f.table_bytes() + e::kStreamSizesBytes, codec::load_u32(payload + 8 * b));
    std::copy_n(payload + section_at[b], bytes, &heads[b * e::kHeadStride]);
  }
  const e::DevicePlan plan =
      e::plan_decoding(payload, std::move(section_at), heads.data(), payload_span.size(), f);
  for (size_t b = 0; b < layout.blocks; ++b) {
    const size_t n = std::min(block, out.count - b * block);
    const uint8_t* entry = payload + 8 * b;
    uint8_t* x = &exps[b * block];
    if (static_cast<BlockMode>(entry[4]) == BlockMode::kConstant) std::fill_n(x, n, entry[5]);
    if (static_cast<BlockMode>(entry[4]) == BlockMode::kRaw) {
      std::copy_n(payload + plan.streams[b * e::kStreams].at, n, x);
      if (*std::max_element(x, x + n) >= f.symbols()) throw CorruptStream("raw exponent");
    }
    if (static_cast<BlockMode>(entry[4]) != BlockMode::kHuffman) continue;
    std::vector<uint16_t> table(size_t{1} << e::kMaxCodeBits, 0);
    for (uint32_t sym = 0; sym < static_cast<uint32_t>(f.symbols()); ++sym) {
      const uint32_t c = plan.codes[b * 256 + sym];
      if ((c >> 16) != 0) e::put_table_entries(table.data(), sym, c & 0xffffu, c >> 16);
    }
    for (int k = 0; k < e::kStreams; ++k) {
      const e::StreamSpan span = plan.streams[b * e::kStreams + k];
      if (!e::get_stream(payload + span.at, span.bytes, e::stream_count(n, k), table.data(),
                         x + e::stream_first(n, k))) {
        throw CorruptStream("bad code");
      }
    }
  }
  for (size_t g = 0; g * e::kGroup < out.count; ++g) {
    e::join_group(payload + layout.rest_at, layout.exponents_at - layout.rest_at, exps.data(),
                  out.count, g, f, static_cast<Word*>(out.data));
  }
}

TEST(ExpHuffDevice, ReplayedDeviceCoderWritesAndReadsTheCpuBytes) {
  for (const DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (const size_t block : {size_t{256}, size_t{16384}}) {
      const CodecConfig config = CodecConfig::parse("exphuff:block=" + std::to_string(block));
      for (const size_t count : {0, 1, 7, 257, 16387, 70000}) {
        for (const auto& [kind, in] : inputs(dtype, count)) {
          const std::string what =
              detail::concat(kind, ", ", name(dtype), ", ", count, " values, block ", block);
          const std::vector<std::byte> stream = compress(config, in.view());
          const std::span<const std::byte> payload = stream_payload(stream);
          const std::vector<std::byte> replayed =
              dtype == DType::kF32 ? replay_device_encoder<uint32_t>(in.view(), block)
                                   : replay_device_encoder<uint16_t>(in.view(), block);
          ASSERT_TRUE(std::equal(payload.begin(), payload.end(), replayed.begin(), replayed.end()))
              << what;
          test::Buffer out(dtype, count);
          if (dtype == DType::kF32) {
            replay_device_decoder<uint32_t>(payload, block, out.view());
          } else {
            replay_device_decoder<uint16_t>(payload, block, out.view());
          }
          EXPECT_TRUE(out.bits_equal(in)) << what;
        }
      }
    }
  }
}

TEST(ExpHuff, EverySixteenBitPatternRoundTrips) {
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    test::Buffer in(dtype, 65536 * 3);
    auto* words = static_cast<uint16_t*>(in.data());
    for (size_t i = 0; i < in.count(); ++i) {
      // All patterns, then those of one sign bunched by exponent (blocks that code well).
      words[i] = static_cast<uint16_t>(i < 65536 ? i : (i * 7919) % 65536);
    }
    const std::vector<std::byte> stream = compress(CodecConfig::parse("exphuff"), in.view());
    test::Buffer out(dtype, in.count());
    decompress(stream, out.view());
    EXPECT_TRUE(out.bits_equal(in)) << name(dtype);
  }
}

TEST(ExpHuff, CompressesTheExponentOfGaussianData) {
  // N(0, 1) in bf16: the exponent has about 2.6 bits of entropy; 8 + 2.6 + tables ~ 10.7 bits.
  const test::Buffer in =
      test::Buffer::from_floats(DType::kBF16, make_data(DataKind::kGaussian, 1 << 20, 3));
  const std::vector<std::byte> stream = compress(CodecConfig::parse("exphuff"), in.view());
  const double bits_per_value = 8.0 * static_cast<double>(stream.size()) / (1 << 20);
  EXPECT_GT(bits_per_value, 10.0);
  EXPECT_LT(bits_per_value, 11.0);
}

TEST(ExpHuffTable, LengthsAreAPrefixCodeWithinTheLimit) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint64_t> histogram(256, 0);
    const int symbols = 2 + static_cast<int>(rng() % 255);
    for (int s = 0; s < symbols; ++s) histogram[rng() % 256] += 1 + rng() % 100000;
    if (std::count_if(histogram.begin(), histogram.end(), [](uint64_t c) { return c; }) < 2) {
      continue;
    }
    const std::vector<uint8_t> lengths = codec::exphuff::code_lengths(histogram);
    double kraft = 0;
    for (size_t s = 0; s < 256; ++s) {
      EXPECT_EQ(lengths[s] == 0, histogram[s] == 0) << s;
      EXPECT_LE(lengths[s], codec::exphuff::kMaxCodeBits);
      if (lengths[s] != 0) kraft += std::ldexp(1.0, -lengths[s]);
    }
    EXPECT_DOUBLE_EQ(kraft, 1.0) << "a Huffman code is complete";
  }
}

TEST(ExpHuffTable, LimitsTheLengthOfSkewedCodes) {
  // Fibonacci counts make the optimal code 20 deep; the limit takes it to 12.
  std::vector<uint64_t> histogram(256, 0);
  uint64_t a = 1, b = 1;
  for (int s = 0; s < 21; ++s) {
    histogram[s] = a;
    const uint64_t next = a + b;
    a = b;
    b = next;
  }
  const std::vector<uint8_t> lengths = codec::exphuff::code_lengths(histogram);
  EXPECT_EQ(*std::max_element(lengths.begin(), lengths.end()), codec::exphuff::kMaxCodeBits);
  EXPECT_EQ(lengths[20], 1);  // the most frequent symbol keeps a 1-bit code
  double kraft = 0;
  for (const uint8_t l : lengths) kraft += l == 0 ? 0.0 : std::ldexp(1.0, -l);
  EXPECT_DOUBLE_EQ(kraft, 1.0);
  // Geometric counts over 200 symbols (a long tail of rare exponents): limited, complete.
  std::vector<uint64_t> tail(256, 0);
  for (int s = 0; s < 200; ++s) tail[s] = 1 + (uint64_t{1} << 40 >> std::min(s, 40));
  const std::vector<uint8_t> tail_lengths = codec::exphuff::code_lengths(tail);
  kraft = 0;
  for (const uint8_t l : tail_lengths) kraft += l == 0 ? 0.0 : std::ldexp(1.0, -l);
  EXPECT_DOUBLE_EQ(kraft, 1.0);
  EXPECT_EQ(*std::max_element(tail_lengths.begin(), tail_lengths.end()),
            codec::exphuff::kMaxCodeBits);
  // Two symbols: one bit each; a textbook case: counts 5, 2, 1, 1 give lengths 1, 2, 3, 3.
  std::vector<uint64_t> two(32, 0), four(32, 0);
  two[3] = 1;
  two[30] = 1000;
  four = {5, 2, 1, 1};
  four.resize(32, 0);
  EXPECT_EQ(codec::exphuff::code_lengths(two)[3], 1);
  const std::vector<uint8_t> l4 = codec::exphuff::code_lengths(four);
  EXPECT_EQ(std::vector<uint8_t>(l4.begin(), l4.begin() + 4), (std::vector<uint8_t>{1, 2, 3, 3}));
}

TEST(ExpHuffTable, CanonicalCodesArePrefixFree) {
  const std::vector<uint8_t> lengths = {1, 0, 3, 3, 4, 4, 4, 5, 5, 0};
  const std::vector<codec::exphuff::Code> codes = codec::exphuff::canonical_codes(lengths);
  for (size_t a = 0; a < codes.size(); ++a) {
    for (size_t b = 0; b < codes.size(); ++b) {
      if (a == b || codes[a].length == 0 || codes[b].length == 0) continue;
      if (codes[a].length > codes[b].length) continue;
      const uint32_t mask = (1u << codes[a].length) - 1;  // LSB-first: a prefix is the low bits
      EXPECT_NE(codes[a].bits, codes[b].bits & mask) << a << " is a prefix of " << b;
    }
  }
  EXPECT_THROW(codec::exphuff::canonical_codes(std::vector<uint8_t>{1, 1, 1}), CorruptStream);
  EXPECT_THROW(codec::exphuff::canonical_codes(std::vector<uint8_t>{0, 0}), CorruptStream);
}

// Malformed payloads behind a valid checksum: the fast decoder and the reference both reject
// them, with CorruptStream, or both accept them with the same values.
TEST(ExpHuff, MalformedPayloadsAreRejectedLikeTheReference) {
  const size_t block = 256, count = 1000;
  const test::Buffer in =
      test::Buffer::from_floats(DType::kBF16, make_data(DataKind::kGaussian, count, 4));
  const std::vector<std::byte> good = compress(CodecConfig::parse("exphuff:block=256"), in.view());
  ASSERT_EQ(modes_of(stream_payload(good), 4)[0], BlockMode::kHuffman);
  std::mt19937_64 rng(11);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::byte> bad = good;
    const size_t at = kStreamHeaderBytes + rng() % (bad.size() - kStreamHeaderBytes);
    bad[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    if (trial % 3 == 0) bad.resize(bad.size() - 1 - rng() % 8);  // also cut
    std::vector<std::byte> resealed = bad;
    if (resealed.size() >= kStreamHeaderBytes + 8) {
      // Declare the new length, then seal: the decoders see the damage, not the checksum.
      const uint64_t payload = resealed.size() - kStreamHeaderBytes;
      std::memcpy(resealed.data() + 16, &payload, 8);
      codec::reseal_stream(resealed);
    }
    test::Buffer fast(DType::kBF16, count), slow(DType::kBF16, count);
    bool fast_ok = true, slow_ok = true;
    try {
      decompress(resealed, fast.view());
    } catch (const CorruptStream&) {
      fast_ok = false;
    }
    try {
      codec::reference::exphuff_decode(stream_payload(resealed), slow.view(), block);
    } catch (const CorruptStream&) {
      slow_ok = false;
    }
    ASSERT_EQ(fast_ok, slow_ok) << "trial " << trial << ", byte " << at;
    if (fast_ok) {
      EXPECT_TRUE(fast.bits_equal(slow)) << "trial " << trial;
    }
    rejected += fast_ok ? 0 : 1;
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace hycc
