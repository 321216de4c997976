// The zfp codec against plain libzfp, its oracle: our payload is plain libzfp's bitstream and
// plain libzfp's bitstream decodes here, bit for bit. Also the fixed-accuracy bound, fixed-rate
// sizes, NaN/Inf through the exception list and the raw layout, strict validation of every
// field, and decoding garbage and encoding worst cases next to a guard page: libzfp is not built
// with AddressSanitizer, so an inaccessible page is what catches a read past the payload.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>

#include "codec/registry.h"
#include "codec/stream.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

constexpr size_t kTrailerBytes = 20;  // u64 bitstream bytes, u64 exceptions, u8 layout, "ZFX"
constexpr uint32_t kMaxFloatBlockBits = 140;  // 1 + 8 + 4 * 32 + 3

// What a plain libzfp user asks for: fixed rate R or fixed accuracy T, as requested.
struct ZfpCase {
  const char* spec;
  bool fixed_rate;
  double value;
};

const ZfpCase kInteropCases[] = {
    {"zfp:rate=4", true, 4},
    {"zfp:rate=8", true, 8},
    {"zfp:rate=9", true, 9},
    {"zfp:rate=16", true, 16},
    {"zfp:accuracy=1e-2", false, 1e-2},
    {"zfp:accuracy=1e-5", false, 1e-5},
};

const size_t kInteropCounts[] = {1, 3, 4, 5, 4097, size_t{1} << 20};

// RAII owners of plain libzfp objects.
struct PlainZfp {
  explicit PlainZfp(const ZfpCase& c, float* values, size_t count)
      : zfp(zfp_stream_open(nullptr)), field(zfp_field_1d(values, zfp_type_float, count)) {
    if (c.fixed_rate) {
      zfp_stream_set_rate(zfp, c.value, zfp_type_float, 1, zfp_false);
    } else {
      zfp_stream_set_accuracy(zfp, c.value);
    }
  }
  ~PlainZfp() {
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

// Plain libzfp, high-level API, the way its documentation shows it.
std::vector<std::byte> plain_compress(const ZfpCase& c, std::vector<float> values) {
  PlainZfp z(c, values.data(), values.size());
  std::vector<uint64_t> buffer((zfp_stream_maximum_size(z.zfp, z.field) + 7) / 8);
  z.attach(buffer.data(), buffer.size() * 8);
  const size_t bytes = zfp_compress(z.zfp, z.field);
  EXPECT_GT(bytes, 0u);
  const auto* p = reinterpret_cast<const std::byte*>(buffer.data());
  return {p, p + bytes};
}

// Plain libzfp decompression. zfp reads without bounds checks, so it reads from a copy padded to
// zfp_stream_maximum_size(). Returns the values and the bytes zfp says it consumed.
std::pair<std::vector<float>, size_t> plain_decompress(const ZfpCase& c,
                                                       std::span<const std::byte> bytes,
                                                       size_t count) {
  std::vector<float> values(count);
  PlainZfp z(c, values.data(), count);
  std::vector<uint64_t> padded(
      (std::max(bytes.size(), zfp_stream_maximum_size(z.zfp, z.field)) + 7) / 8);
  std::memcpy(padded.data(), bytes.data(), bytes.size());
  z.attach(padded.data(), padded.size() * 8);
  const size_t consumed = zfp_decompress(z.zfp, z.field);
  return {values, consumed};
}

std::vector<std::byte> payload_of(const std::vector<std::byte>& stream) {
  const auto p = stream_payload(stream);
  return {p.begin(), p.end()};
}

// Wraps a payload into a stream and decodes it.
test::Buffer decode_payload(const CodecConfig& config, DType dtype, size_t count,
                            std::span<const std::byte> payload) {
  std::vector<std::byte> stream(kStreamHeaderBytes + payload.size());
  frame_payload(config, dtype, count, payload, stream);
  test::Buffer out(dtype, count);
  decompress(stream, out.view());
  return out;
}

bool same_bits(const std::vector<float>& a, const float* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(float)) == 0;
}

uint64_t expected_rate_bytes(double rate, size_t count) {
  const uint64_t block_bits = std::max<uint64_t>(9, uint64_t(std::floor(4 * rate + 0.5)));
  return ((count + 3) / 4 * block_bits + 7) / 8;
}

std::string case_name(const char* spec) {
  std::string s = spec;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

using InteropParam = std::tuple<ZfpCase, size_t>;
class ZfpInterop : public ::testing::TestWithParam<InteropParam> {};

TEST_P(ZfpInterop, OurPayloadIsPlainLibzfpsBitstream) {
  const auto& [c, count] = GetParam();
  const CodecConfig config = CodecConfig::parse(c.spec);
  const std::vector<float> values = make_data(DataKind::kGaussian, count, 11);
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, values);

  const std::vector<std::byte> plain = plain_compress(c, values);
  const std::vector<std::byte> stream = compress(config, in.view());
  const std::vector<std::byte> payload = payload_of(stream);
  EXPECT_EQ(payload, plain) << c.spec << " n=" << count;

  test::Buffer ours(DType::kF32, count);
  decompress(stream, ours.view());
  const auto [theirs, consumed] = plain_decompress(c, payload, count);
  EXPECT_EQ(consumed, payload.size());
  EXPECT_TRUE(same_bits(theirs, static_cast<const float*>(ours.data())))
      << "plain libzfp decodes our payload differently, " << c.spec << " n=" << count;
}

TEST_P(ZfpInterop, PlainLibzfpStreamDecodesHere) {
  const auto& [c, count] = GetParam();
  const CodecConfig config = CodecConfig::parse(c.spec);
  const std::vector<float> values = make_data(DataKind::kLaplace, count, 12);
  const std::vector<std::byte> plain = plain_compress(c, values);
  test::Buffer ours = decode_payload(config, DType::kF32, count, plain);
  const auto [theirs, consumed] = plain_decompress(c, plain, count);
  EXPECT_EQ(consumed, plain.size());
  EXPECT_TRUE(same_bits(theirs, static_cast<const float*>(ours.data())))
      << c.spec << " n=" << count;
}

// With NaN/Inf the payload still starts with plain libzfp's bitstream of the data with the
// non-finite values replaced by 0, and plain libzfp ignores what follows.
TEST_P(ZfpInterop, NonFiniteValuesLeaveThePrefixPlain) {
  const auto& [c, count] = GetParam();
  const CodecConfig config = CodecConfig::parse(c.spec);
  const std::vector<float> values = test::data_with_specials(count, 13);
  std::vector<float> zeroed = values;
  for (float& v : zeroed) {
    if (!std::isfinite(v)) v = 0;
  }
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, values);
  const std::vector<std::byte> payload = payload_of(compress(config, in.view()));
  const std::vector<std::byte> plain = plain_compress(c, zeroed);
  ASSERT_GT(payload.size(), plain.size());
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), payload.begin())) << c.spec;

  const test::Buffer ours = decode_payload(config, DType::kF32, count, payload);
  const std::vector<float> decoded = ours.to_floats();
  const auto [theirs, consumed] = plain_decompress(c, payload, count);
  EXPECT_EQ(consumed, plain.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::isfinite(values[i])) {
      mismatches += std::memcmp(&theirs[i], &decoded[i], 4) != 0;
    } else {
      mismatches += std::memcmp(&values[i], &decoded[i], 4) != 0;  // NaN payload bits too
    }
  }
  EXPECT_EQ(mismatches, 0u) << c.spec << " n=" << count;
}

std::string interop_name(const ::testing::TestParamInfo<InteropParam>& param) {
  return case_name(std::get<0>(param.param).spec) + "_n" + std::to_string(std::get<1>(param.param));
}

INSTANTIATE_TEST_SUITE_P(Zfp, ZfpInterop,
                         ::testing::Combine(::testing::ValuesIn(kInteropCases),
                                            ::testing::ValuesIn(kInteropCounts)),
                         interop_name);

// 16-bit inputs reach zfp as the exactly widened floats.
TEST(Zfp, SixteenBitInputsAreCompressedAsWidenedFloats) {
  const ZfpCase c = kInteropCases[1];
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const test::Buffer in =
        test::Buffer::from_floats(dtype, make_data(DataKind::kGaussian, 4099, 14));
    const std::vector<std::byte> payload =
        payload_of(compress(CodecConfig::parse(c.spec), in.view()));
    EXPECT_EQ(payload, plain_compress(c, in.to_floats())) << dtype_name(dtype);
  }
}

TEST(Zfp, FixedAccuracyBoundHolds) {
  for (DataKind kind : {DataKind::kGaussian, DataKind::kLaplace, DataKind::kSmooth}) {
    const std::vector<float> values = make_data(kind, (size_t{1} << 18) + 3, 15);
    const test::Buffer in = test::Buffer::from_floats(DType::kF32, values);
    for (double tolerance : {1e-1, 1e-2, 1e-3, 1e-5}) {
      const CodecConfig config = CodecConfig::parse("zfp:accuracy=" + std::to_string(tolerance));
      test::Buffer out(DType::kF32, values.size());
      decompress(compress(config, in.view()), out.view());
      const double err = test::max_abs_error(values, out.to_floats());
      EXPECT_LE(err, tolerance) << config.spec() << " kind " << int(kind);
      EXPECT_GT(err, 0.0) << "suspiciously exact";
    }
  }
}

TEST(Zfp, FixedRatePayloadIsWhatTheRateImplies) {
  for (double rate : {0.5, 2.25, 4.0, 8.0, 9.0, 9.3, 16.0, 31.75, 32.0}) {
    const CodecConfig config = CodecConfig::parse("zfp:rate=" + std::to_string(rate));
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (size_t count : {1, 2, 3, 4, 5, 7, 8, 9, 4097, 65536}) {
        const test::Buffer in =
            test::Buffer::from_floats(dtype, make_data(DataKind::kLaplace, count, 16));
        const StreamInfo info = inspect(compress(config, in.view()));
        EXPECT_EQ(info.payload_bytes, expected_rate_bytes(rate, count))
            << config.spec() << " " << dtype_name(dtype) << " n=" << count;
        EXPECT_LE(info.payload_bytes, config.codec().max_payload_bytes(dtype, count));
      }
    }
  }
}

TEST(Zfp, CanonicalSpecIsWhatZfpApplies) {
  const std::pair<const char*, const char*> cases[] = {
      {"zfp:rate=8", "zfp:rate=8"},
      {"zfp:rate=9", "zfp:rate=9"},
      {"zfp:rate=0.1", "zfp:rate=2.25"},  // zfp needs 9 bits per block of 4 floats
      {"zfp:rate=4.1", "zfp:rate=4"},
      {"zfp:rate=4.125", "zfp:rate=4.25"},
      {"zfp:rate=32", "zfp:rate=32"},
      {"zfp: rate = 16 ", "zfp:rate=16"},
      {"zfp:accuracy=1", "zfp:accuracy=1"},
      {"zfp:accuracy=1e-5", "zfp:accuracy=7.62939453125e-06"},  // 2^-17
      {"zfp:accuracy=0.0009765625", "zfp:accuracy=0.0009765625"},
      {"zfp:accuracy=1e-3", "zfp:accuracy=0.0009765625"},
      {"zfp:accuracy=1e38", "zfp:accuracy=8.507059173023462e+37"},                       // 2^126
      {"zfp:accuracy=2.2250738585072014e-308", "zfp:accuracy=2.2250738585072014e-308"},  // 2^-1022
  };
  for (const auto& [spec, canonical] : cases) {
    const CodecConfig config = CodecConfig::parse(spec);
    EXPECT_EQ(config.spec(), canonical) << spec;
    EXPECT_EQ(CodecConfig::parse(config.spec()).spec(), config.spec());
    EXPECT_EQ(config.id(), CodecId::kZfp);
    EXPECT_FALSE(config.lossless());
    // The header parameters rebuild the same codec.
    const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1.5f, -2.0f, 3.25f});
    EXPECT_EQ(inspect(compress(config, in.view())).spec, canonical);
  }
}

TEST(Zfp, BadSpecsSayWhatIsAllowed) {
  for (const char* spec :
       {"zfp", "zfp:rate=0", "zfp:rate=-1", "zfp:rate=33", "zfp:rate=x", "zfp:accuracy=0",
        "zfp:accuracy=-1e-3", "zfp:accuracy=1e39", "zfp:accuracy=nan", "zfp:rate=8,accuracy=1",
        "zfp:precision=16", "zfp:rate=8,align=1"}) {
    const std::string what = test::spec_error(spec);
    ASSERT_FALSE(what.empty()) << spec << " was accepted";
    EXPECT_NE(what.find(spec), std::string::npos) << what;
    EXPECT_TRUE(what.find("rate") != std::string::npos ||
                what.find("accuracy") != std::string::npos)
        << what;
  }
}

// Non-finite values at these positions, the rest gaussian.
test::Buffer with_non_finite(DType dtype, size_t count, const std::vector<size_t>& positions) {
  std::vector<float> v = make_data(DataKind::kGaussian, count, 17);
  const float specials[] = {std::nanf(""), INFINITY, -INFINITY, -std::nanf("0x123")};
  for (size_t i = 0; i < positions.size(); ++i) v[positions[i]] = specials[i % 4];
  return test::Buffer::from_floats(dtype, v);
}

size_t element_bits_differ(const test::Buffer& a, const test::Buffer& b, size_t i) {
  const size_t e = dtype_size(a.dtype());
  return std::memcmp(static_cast<const std::byte*>(a.view().data) + i * e,
                     static_cast<const std::byte*>(b.view().data) + i * e, e) != 0;
}

TEST(Zfp, FewNonFiniteValuesAreListed) {
  const size_t count = 4097;  // at most 4097 / 64 + 1 = 65 listed
  for (const char* spec : {"zfp:rate=8", "zfp:accuracy=1e-3"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (size_t listed : {1, 4, 65}) {
        std::vector<size_t> positions;
        for (size_t i = 0; i < listed; ++i) positions.push_back(i * 63 + (i % 3));
        positions.back() = count - 1;
        const test::Buffer in = with_non_finite(dtype, count, positions);
        const auto stream = compress(config, in.view());
        const uint64_t payload = inspect(stream).payload_bytes;
        if (config.spec() == "zfp:rate=8") {
          EXPECT_EQ(payload, expected_rate_bytes(8, count) + listed * (8 + dtype_size(dtype)) +
                                 kTrailerBytes);
        }
        test::Buffer out(dtype, count);
        decompress(stream, out.view());
        const std::vector<float> a = in.to_floats(), b = out.to_floats();
        size_t wrong = 0;
        for (size_t p : positions) wrong += element_bits_differ(in, out, p);
        EXPECT_EQ(wrong, 0u) << spec << " " << dtype_name(dtype) << " listed " << listed;
        std::vector<float> finite_in, finite_out;
        for (size_t i = 0; i < count; ++i) {
          if (!std::isfinite(a[i])) continue;
          wrong += !std::isfinite(b[i]);
          finite_in.push_back(a[i]);
          finite_out.push_back(b[i]);
        }
        EXPECT_EQ(wrong, 0u);
        EXPECT_LE(test::rel_l2_error(finite_in, finite_out), spec[4] == 'a' ? 2e-3 : 0.15);
        if (dtype == DType::kF32 && spec[4] == 'a') {
          EXPECT_LE(test::max_abs_error(a, b), 1e-3) << "bound with exceptions";
        }
      }
    }
  }
}

TEST(Zfp, ManyNonFiniteValuesFallBackToRaw) {
  for (const char* spec : {"zfp:rate=8", "zfp:rate=32", "zfp:accuracy=1e-3"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (size_t count : {2, 6, 4097, 100000}) {
        std::vector<size_t> positions;  // every other value, then one over the cap of count/64+1
        for (size_t i = 0; i < count; i += count < 100 ? 1 : 2) positions.push_back(i);
        const test::Buffer in = with_non_finite(dtype, count, positions);
        const auto stream = compress(config, in.view());
        const uint64_t payload = inspect(stream).payload_bytes;
        const uint64_t raw = count * dtype_size(dtype) + kTrailerBytes;
        if (spec[4] == 'a') {
          EXPECT_EQ(payload, raw + ((count + 3) / 4 + 7) / 8);  // after a zero bitstream
        } else if (raw == expected_rate_bytes(spec[9] == '8' ? 8 : 32, count)) {
          EXPECT_EQ(payload, raw + 1) << "pad byte: a payload of the bitstream's size is plain";
        } else {
          EXPECT_EQ(payload, raw);
        }
        test::Buffer out(dtype, count);
        decompress(stream, out.view());
        EXPECT_TRUE(out.bits_equal(in)) << spec << " " << dtype_name(dtype) << " n=" << count;
      }
    }
  }
}

TEST(Zfp, MaxPayloadIsTightAndAgreesWithLibzfp) {
  for (const ZfpCase& c : kInteropCases) {
    const CodecConfig config = CodecConfig::parse(c.spec);
    const Codec& codec = config.codec();
    EXPECT_EQ(codec.max_payload_bytes(DType::kF32, 0), 0u);
    for (size_t count : {1, 5, 4097, 1 << 20}) {
      PlainZfp z(c, nullptr, count);
      const size_t zfp_max = zfp_stream_maximum_size(z.zfp, z.field);
      const size_t cap = count / 64 + 1;
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        const size_t e = dtype_size(dtype);
        EXPECT_LE(codec.max_payload_bytes(dtype, count),
                  std::max(zfp_max + kTrailerBytes + cap * (8 + e), count * e + kTrailerBytes))
            << c.spec << " n=" << count;
      }
      if (!c.fixed_rate && stream_word_bits == 8) {
        // The bits per float block this codec relies on are the linked libzfp's own figure.
        const size_t blocks = (count + 3) / 4;
        EXPECT_EQ(zfp_max, (ZFP_HEADER_MAX_BITS + blocks * kMaxFloatBlockBits + 7) / 8);
      }
    }
  }
}

// Parameters in the stream header are validated: each of these edits is rejected.
TEST(Zfp, RejectsBadHeaderParameters) {
  using Edit = std::pair<size_t, std::vector<uint8_t>>;  // offset in the 16 bytes, new bytes
  const std::pair<const char*, std::vector<Edit>> cases[] = {
      {"zfp:rate=8",
       {{0, {0}}, {0, {3}}, {1, {1}}, {15, {1}}, {4, {8, 0, 0, 0}}, {4, {129, 0, 0, 0}}}},
      {"zfp:accuracy=1e-3",
       {{0, {9}}, {3, {1}}, {8, {1}}, {4, {0xcd, 0xfb, 0xff, 0xff}}, {4, {127, 0, 0, 0}}}},
  };  // 0xfffffbcd is 2^-1075, 127 is 2^127
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, 9));
  for (const auto& [spec, edits] : cases) {
    const auto good = compress(CodecConfig::parse(spec), in.view());
    for (const auto& [at, bytes] : edits) {
      auto bad = good;
      std::memcpy(bad.data() + 24 + at, bytes.data(), bytes.size());
      codec::reseal_stream(bad);
      test::Buffer out(DType::kF32, 9);
      EXPECT_THROW(decompress(bad, out.view()), CorruptStream) << spec << " edit at " << at;
    }
  }
}

// Every field of the exception list and the trailer is checked.
TEST(Zfp, RejectsInconsistentTrailersAndExceptions) {
  const size_t count = 1000;
  for (const char* spec : {"zfp:rate=9", "zfp:accuracy=1e-2"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    const test::Buffer in = with_non_finite(DType::kF32, count, {3, 500, 999});
    const std::vector<std::byte> good = payload_of(compress(config, in.view()));
    const size_t n = good.size();
    const size_t trailer = n - kTrailerBytes;
    uint64_t zfp_bytes;
    std::memcpy(&zfp_bytes, good.data() + trailer, 8);
    const size_t positions = static_cast<size_t>(zfp_bytes);
    test::Buffer expected(DType::kF32, count);
    decompress(compress(config, in.view()), expected.view());
    EXPECT_TRUE(decode_payload(config, DType::kF32, count, good).bits_equal(expected));

    auto put = [&](std::vector<std::byte> p, size_t at, uint64_t v, size_t bytes) {
      std::memcpy(p.data() + at, &v, bytes);
      return p;
    };
    const std::vector<std::pair<const char*, std::vector<std::byte>>> bad = {
        {"position past the end", put(good, positions + 16, count, 8)},
        {"positions not increasing", put(good, positions + 8, 3, 8)},
        {"finite element bits", put(good, positions + 24 + 4, 0x3f800000, 4)},
        {"bitstream length off by one", put(good, trailer, zfp_bytes + 1, 8)},
        {"no exceptions", put(good, trailer + 8, 0, 8)},
        {"one exception too many", put(good, trailer + 8, 4, 8)},
        {"unknown layout", put(good, trailer + 16, 3, 1)},
        {"raw layout", put(good, trailer + 16, 2, 1)},
        {"bad magic", put(good, n - 1, 'Y', 1)},
        {"truncated", std::vector<std::byte>(good.begin(), good.end() - 1)},
        {"trailer only", std::vector<std::byte>(good.end() - kTrailerBytes, good.end())},
    };
    for (const auto& [what, payload] : bad) {
      EXPECT_THROW(decode_payload(config, DType::kF32, count, payload), CorruptStream)
          << spec << ": " << what;
    }
  }
}

TEST(Zfp, RejectsInconsistentRawLayouts) {
  for (const char* spec : {"zfp:rate=8", "zfp:accuracy=1e-2"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    std::vector<size_t> all(100);
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    const test::Buffer in = with_non_finite(DType::kBF16, 100, all);
    const std::vector<std::byte> good = payload_of(compress(config, in.view()));
    EXPECT_TRUE(decode_payload(config, DType::kBF16, 100, good).bits_equal(in));
    const size_t trailer = good.size() - kTrailerBytes;
    auto edited = [&](size_t at, uint8_t v) {
      auto p = good;
      p[at] = std::byte{v};
      return p;
    };
    EXPECT_THROW(decode_payload(config, DType::kBF16, 100, edited(trailer, 9)), CorruptStream);
    EXPECT_THROW(decode_payload(config, DType::kBF16, 100, edited(trailer + 8, 1)), CorruptStream);
    std::vector<std::byte> shorter = good;  // (longer ones exceed max_payload_bytes)
    shorter.erase(shorter.begin() + 40);
    EXPECT_THROW(decode_payload(config, DType::kBF16, 100, shorter), CorruptStream);
    if (spec[4] == 'a') {  // the zero bitstream must be one
      EXPECT_THROW(decode_payload(config, DType::kBF16, 100, edited(0, 0xff)), CorruptStream);
    }
  }
  // Empty tensors have empty payloads.
  const CodecConfig config = CodecConfig::parse("zfp:rate=8");
  EXPECT_EQ(inspect(compress(config, test::Buffer(DType::kF32, 0).view())).payload_bytes, 0u);
  EXPECT_THROW(
      config.codec().decode(std::vector<std::byte>(1), test::Buffer(DType::kF32, 0).view()),
      CorruptStream);
}

// `size` bytes that end where an inaccessible page begins, so that any read or write past them
// faults, whether or not the code doing it was built with AddressSanitizer.
class GuardedBytes {
 public:
  explicit GuardedBytes(size_t size) : size_(size) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mapped_ = (size + page - 1) / page * page + page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<std::byte*>(p);
    if (mprotect(base_ + mapped_ - page, page, PROT_NONE) != 0) throw std::bad_alloc();
    // zfp needs buffers aligned to its stream word; with byte words the end touches the guard.
    const size_t word = stream_word_bits / 8;
    data_ = base_ + (mapped_ - page - size) / word * word;
  }
  ~GuardedBytes() { munmap(base_, mapped_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;

  std::span<std::byte> span() { return {data_, size_}; }

 private:
  size_t size_;
  size_t mapped_;
  std::byte* base_;
  std::byte* data_;
};

// Garbage, truncated and bit-flipped payloads, decoded straight from guarded memory: the decoder
// may reject them, but zfp must not read a byte past them.
TEST(Zfp, DecodingGarbageNeverReadsPastThePayload) {
  std::mt19937_64 rng(18);
  size_t rejected = 0, decoded = 0;
  for (const char* spec :
       {"zfp:rate=8", "zfp:rate=32", "zfp:accuracy=1e-3", "zfp:accuracy=2.2250738585072014e-308"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (size_t count : {1, 5, 4097, 100000}) {
      const test::Buffer in =
          test::Buffer::from_floats(DType::kF32, test::data_with_specials(count, 19));
      const std::vector<std::byte> good = payload_of(compress(config, in.view()));
      test::Buffer out(DType::kF32, count);
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<std::byte> bytes;
        if (trial % 4 == 0) {  // random bytes, short or long
          const size_t max = config.codec().max_payload_bytes(DType::kF32, count);
          bytes.resize(trial % 8 == 0 ? rng() % 64 : rng() % (max + 1));
          for (auto& b : bytes) b = std::byte(rng());
        } else if (trial % 4 == 1) {  // the valid payload cut short
          bytes.assign(good.begin(), good.begin() + rng() % good.size());
        } else {  // the valid payload with bytes overwritten
          bytes = good;
          for (int f = 0; f < 1 + trial % 8; ++f) bytes[rng() % bytes.size()] = std::byte(rng());
        }
        GuardedBytes guarded(bytes.size());
        std::copy(bytes.begin(), bytes.end(), guarded.span().begin());
        try {
          config.codec().decode(guarded.span(), out.view());
          ++decoded;
        } catch (const CorruptStream&) {
          ++rejected;
        }
      }
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(decoded, 0u);  // overwritten bitstream bytes still decode, to other values
}

// The most expensive blocks zfp can write, into an output of exactly max_payload_bytes().
TEST(Zfp, EncodingWorstCasesStaysInsideMaxPayload) {
  std::mt19937_64 rng(20);
  for (const char* spec :
       {"zfp:rate=32", "zfp:accuracy=2.2250738585072014e-308", "zfp:accuracy=1e-5"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (size_t count : {1, 7, 4097}) {
        std::vector<float> v(count);
        for (float& x : v) {  // random finite bit patterns: every exponent, full mantissas
          uint32_t b = static_cast<uint32_t>(rng());
          if ((b & 0x7f800000u) == 0x7f800000u) b ^= 0x00800000u;
          std::memcpy(&x, &b, 4);
        }
        const test::Buffer in = test::Buffer::from_floats(dtype, v);
        GuardedBytes out(config.codec().max_payload_bytes(dtype, count));
        const size_t n = config.codec().encode(in.view(), out.span(), {});
        EXPECT_LE(n, out.span().size());
        test::Buffer back(dtype, count);
        config.codec().decode(out.span().first(n), back.view());
      }
    }
  }
}

// Figures for the report, not assertions.
TEST(Zfp, ReportsRatioAndErrorOnGaussianData) {
  const std::vector<float> values = make_data(DataKind::kGaussian, size_t{1} << 20, 21);
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, values);
  for (const char* spec : {"zfp:rate=8", "zfp:rate=9", "zfp:accuracy=1e-2"}) {
    const auto stream = compress(CodecConfig::parse(spec), in.view());
    test::Buffer out(DType::kF32, values.size());
    decompress(stream, out.view());
    const std::vector<float> back = out.to_floats();
    double sum = 0;
    for (size_t i = 0; i < values.size(); ++i)
      sum += double(values[i] - back[i]) * (values[i] - back[i]);
    const double ratio = double(in.view().bytes()) / double(stream.size());
    const double rmse = std::sqrt(sum / double(values.size()));
    std::printf("[ zfp      ] %s on 2^20 gaussian f32: ratio %.4f, rmse %.6g, max error %.6g\n",
                spec, ratio, rmse, test::max_abs_error(values, back));
    RecordProperty(std::string(spec) + " ratio", std::to_string(ratio));
    RecordProperty(std::string(spec) + " rmse", std::to_string(rmse));
    if (std::string(spec) == "zfp:rate=9") {
      EXPECT_NEAR(ratio, 32.0 / 9.0, 0.01);
    }
  }
}

}  // namespace
}  // namespace hycc
