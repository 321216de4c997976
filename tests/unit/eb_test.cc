// The "eb" codec: its guarantee |x - x'| <= bound in the output dtype over bounds, data sets,
// scales, dtypes and counts; special values; the fast path against the reference, bit for bit;
// compression on smooth versus noisy data; and payloads corrupted behind a valid checksum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "codec/eb_reference.h"
#include "codec/registry.h"
#include "codec/stream.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

struct Bound {
  const char* spec;
  bool relative;
  double value;
};

const Bound kBounds[] = {
    {"eb:abs=1e-1", false, 1e-1}, {"eb:abs=1e-2", false, 1e-2}, {"eb:abs=1e-3", false, 1e-3},
    {"eb:abs=1e-4", false, 1e-4}, {"eb:abs=1e-5", false, 1e-5}, {"eb:abs=1e-6", false, 1e-6},
    {"eb:abs=1e-7", false, 1e-7}, {"eb:rel=1e-2", true, 1e-2},  {"eb:rel=1e-3", true, 1e-3},
    {"eb:rel=1e-4", true, 1e-4},  {"eb:rel=1e-5", true, 1e-5},  {"eb:rel=1e-6", true, 1e-6},
};
const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
// The largest count: a million values in the Release suite; under the sanitizers (the test code
// is compiled with HYCC_TEST_SANITIZED there) 65539, still a thousand blocks of every data set
// and bound with an uneven tail, the code paths of the million: the full count took a third of
// the instrumented unit tests' time (61 of 176 s).
#ifdef HYCC_TEST_SANITIZED
constexpr size_t kLargeCount = (size_t{1} << 16) + 3;
#else
constexpr size_t kLargeCount = size_t{1} << 20;
#endif
const size_t kCounts[] = {0, 1, 63, 64, 65, 4097, kLargeCount};
// The reference is slow (one bit at a time): it checks every count up to this one.
constexpr size_t kReferenceCountLimit = 4097;

struct DataSet {
  std::string name;
  std::vector<float> values;  // kCounts' largest count; smaller counts take a prefix
};

std::vector<float> scaled(DataKind kind, float scale) {
  std::vector<float> v = make_data(kind, size_t{1} << 20, 11);
  for (float& x : v) x *= scale;
  return v;
}

// Gaussian, Laplace and smooth data at three scales, denormals, values near the largest float,
// and magnitudes from 1e-38 to 1e38 side by side.
const std::vector<DataSet>& data_sets() {
  static const std::vector<DataSet> sets = [] {
    std::vector<DataSet> s;
    const std::pair<DataKind, const char*> kinds[] = {{DataKind::kGaussian, "gaussian"},
                                                      {DataKind::kLaplace, "laplace"},
                                                      {DataKind::kSmooth, "smooth"}};
    for (const auto& [kind, name] : kinds) {
      for (float scale : {1e-30f, 1.0f, 1e30f}) {
        s.push_back({std::string(name) + "*" + std::to_string(scale), scaled(kind, scale)});
      }
    }
    const size_t n = size_t{1} << 20;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<float> denormal(n), near_max(n), mixed(n);
    for (size_t i = 0; i < n; ++i) {
      const double sign = unit(rng) < 0.5 ? -1.0 : 1.0;
      denormal[i] = static_cast<float>(sign * unit(rng) * 1.1754943508222875e-38);
      near_max[i] = static_cast<float>(sign * kFloatMax * (1.0 - unit(rng) * 1e-3));
      mixed[i] = static_cast<float>(sign * unit(rng) * std::pow(10.0, unit(rng) * 76.0 - 38.0));
    }
    near_max[3] = kFloatMax;
    near_max[4] = -kFloatMax;
    s.push_back({"denormal", denormal});
    s.push_back({"near_max", near_max});
    s.push_back({"mixed", mixed});
    return s;
  }();
  return sets;
}

uint32_t element_bits(ConstTensorView v, size_t i) {
  if (v.dtype == DType::kF32) return static_cast<const uint32_t*>(v.data)[i];
  return static_cast<const uint16_t*>(v.data)[i];
}

// The bound a spec promises for this input, computed independently of the codec.
double expected_bound(const Bound& b, const std::vector<float>& in) {
  if (!b.relative) return b.value;
  double lo = INFINITY, hi = -INFINITY;
  for (float x : in) {
    if (std::isfinite(x)) {
      lo = std::min(lo, double(x));
      hi = std::max(hi, double(x));
    }
  }
  return lo <= hi ? b.value * (hi - lo) : 0.0;
}

// Counts elements that break the contract: NaN bit for bit, infinities exact, finite values
// within the bound. Reports the first offender.
size_t violations(const test::Buffer& in, const test::Buffer& out, double bound,
                  const std::string& what) {
  const std::vector<float> a = in.to_floats(), b = out.to_floats();
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok;
    if (std::isnan(a[i])) {
      ok = element_bits(in.view(), i) == element_bits(out.view(), i);
    } else if (std::isinf(a[i])) {
      ok = a[i] == b[i];
    } else {
      ok = std::fabs(double(a[i]) - double(b[i])) <= bound;
    }
    if (!ok && bad++ == 0) {
      ADD_FAILURE() << what << ": element " << i << " in " << a[i] << " out " << b[i] << " error "
                    << std::fabs(double(a[i]) - double(b[i])) << " bound " << bound;
    }
  }
  return bad;
}

// A payload in 8-byte aligned storage, as the stream layer hands it to a codec.
struct Payload {
  std::vector<uint64_t> words;
  size_t size = 0;
  std::span<std::byte> bytes() { return {reinterpret_cast<std::byte*>(words.data()), size}; }
};

Payload encode_payload(const CodecConfig& config, ConstTensorView in) {
  Payload p;
  p.words.resize(config.codec().max_payload_bytes(in.dtype, in.count) / 8 + 1);
  p.size = config.codec().encode(
      in, {reinterpret_cast<std::byte*>(p.words.data()), p.words.size() * 8}, {});
  return p;
}

Payload aligned_copy(std::span<const std::byte> bytes) {
  Payload p;
  p.words.resize(bytes.size() / 8 + 1);
  p.size = bytes.size();
  if (!bytes.empty()) std::memcpy(p.words.data(), bytes.data(), bytes.size());
  return p;
}

double payload_f64(Payload& p, size_t at) {
  double v;
  std::memcpy(&v, p.bytes().data() + at, 8);
  return v;
}

// The reference encoder writes the same payload byte for byte, and decodes it to the same bits.
void expect_reference_agrees(const Bound& b, const test::Buffer& in, Payload& payload,
                             const test::Buffer& out, const std::string& what) {
  const std::vector<std::byte> expected = codec::reference::eb_encode(
      in.view(), codec::reference::eb_resolve_bound(in.view(), b.relative, b.value));
  ASSERT_EQ(payload.size, expected.size()) << what << ": size differs from the reference";
  ASSERT_TRUE(std::equal(expected.begin(), expected.end(), payload.bytes().begin()))
      << what << ": payload differs from the reference";
  test::Buffer ref_out(in.dtype(), in.count());
  codec::reference::eb_decode(payload.bytes(), ref_out.view());
  ASSERT_TRUE(ref_out.bits_equal(out)) << what << ": reference decodes differently";
}

// Encodes and decodes with the fast path, compares with the reference; returns the output.
test::Buffer round_trip_checked(const Bound& b, const test::Buffer& in, const std::string& what) {
  const CodecConfig config = CodecConfig::parse(b.spec);
  Payload payload = encode_payload(config, in.view());
  test::Buffer out(in.dtype(), in.count());
  config.codec().decode(payload.bytes(), out.view());
  expect_reference_agrees(b, in, payload, out, what);
  return out;
}

using Param = std::tuple<Bound, DType>;

class EbBound : public ::testing::TestWithParam<Param> {};

TEST_P(EbBound, HoldsOnEveryDataSetAndCount) {
  const auto& [bound_case, dtype] = GetParam();
  const CodecConfig config = CodecConfig::parse(bound_case.spec);
  for (const DataSet& set : data_sets()) {
    for (size_t count : kCounts) {
      const std::string what =
          detail::concat(bound_case.spec, " ", dtype_name(dtype), " ", set.name, " n=", count);
      const std::vector<float> prefix(set.values.begin(), set.values.begin() + count);
      const test::Buffer in = test::Buffer::from_floats(dtype, prefix);
      const double bound = expected_bound(bound_case, in.to_floats());

      Payload payload = encode_payload(config, in.view());
      ASSERT_LE(payload.size, config.codec().max_payload_bytes(dtype, count)) << what;
      if (count > 0) {
        EXPECT_EQ(payload_f64(payload, 0), bound) << what << ": stored bound";
      }
      test::Buffer out(dtype, count);
      config.codec().decode(payload.bytes(), out.view());
      ASSERT_EQ(violations(in, out, bound, what), 0u) << what;

      if (count <= kReferenceCountLimit) {
        ASSERT_NO_FATAL_FAILURE(expect_reference_agrees(bound_case, in, payload, out, what));
      }
    }
  }
}

TEST_P(EbBound, KeepsSpecialValuesExactly) {
  const auto& [bound_case, dtype] = GetParam();
  const CodecConfig config = CodecConfig::parse(bound_case.spec);
  for (size_t count : {size_t{1}, size_t{64}, size_t{4097}}) {
    std::vector<float> values = test::data_with_specials(count, 9);
    // NaNs with payloads and both signs must come back bit for bit.
    for (size_t i = 5; i < count; i += 101) values[i] = -std::nanf("0x2a");
    const test::Buffer in = test::Buffer::from_floats(dtype, values);
    const std::string what = detail::concat(bound_case.spec, " ", dtype_name(dtype), " n=", count);
    test::Buffer out(dtype, count);
    decompress(compress(config, in.view()), out.view());
    EXPECT_EQ(violations(in, out, expected_bound(bound_case, in.to_floats()), what), 0u) << what;
    round_trip_checked(bound_case, in, what);
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string s = std::get<0>(info.param).spec;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s + "_" + std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllBounds, EbBound,
                         ::testing::Combine(::testing::ValuesIn(kBounds),
                                            ::testing::ValuesIn(kDTypes)),
                         param_name);

TEST(EbAbsBound, HoldsAtHalfwayPointsBetweenSteps) {
  // x = (k + 1/2) * step sits exactly at the bound from both neighbouring quanta.
  for (const Bound& b : kBounds) {
    if (b.relative) continue;  // the step of rel depends on the data
    const double step = 2 * b.value;
    std::vector<float> values;
    for (int k = -3000; k < 3000; ++k) {
      const float halfway = static_cast<float>((k + 0.5) * step);
      values.push_back(halfway);
      values.push_back(std::nextafter(halfway, INFINITY));
      values.push_back(std::nextafter(halfway, -INFINITY));
    }
    for (DType dtype : kDTypes) {
      const test::Buffer in = test::Buffer::from_floats(dtype, values);
      const std::string what = detail::concat(b.spec, " ", dtype_name(dtype), " halfway");
      const test::Buffer out = round_trip_checked(b, in, what);
      EXPECT_EQ(violations(in, out, b.value, what), 0u);
    }
  }
}

double ratio(const char* spec, DataKind kind, size_t count) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, make_data(kind, count));
  return double(in.view().bytes()) / double(compress(CodecConfig::parse(spec), in.view()).size());
}

TEST(EbCompression, SmoothDataCompressesMuchBetterThanNoise) {
  // Measured with abs=1e-3 on 2^20 values: 2.62 on gaussian, 2.50 on laplace, 8.96 on smooth
  // data (12.2, 12.8 and 3.6 bits per value).
  const size_t n = size_t{1} << 20;
  const double gaussian = ratio("eb:abs=1e-3", DataKind::kGaussian, n);
  const double laplace = ratio("eb:abs=1e-3", DataKind::kLaplace, n);
  const double smooth = ratio("eb:abs=1e-3", DataKind::kSmooth, n);
  EXPECT_GT(gaussian, 2.4);
  EXPECT_GT(laplace, 2.3);
  EXPECT_GT(smooth, 8.0);
  EXPECT_GT(smooth, 3 * gaussian);
  // A looser bound costs fewer bits: one bit per halving of the step.
  EXPECT_GT(ratio("eb:abs=1e-2", DataKind::kGaussian, n), gaussian * 1.2);
}

TEST(EbCompression, BoundLargerThanTheRangeGivesATinyPayload) {
  const size_t n = size_t{1} << 20;
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, n));
  const size_t blocks = n / codec::eb::kBlockValues;
  for (const char* spec : {"eb:abs=100", "eb:rel=2", "eb:abs=1e300"}) {
    const auto stream = compress(CodecConfig::parse(spec), in.view());
    // Each block is a header byte and a one-byte base: a quarter of a bit per value.
    EXPECT_LE(stream.size(), kStreamHeaderBytes + codec::eb::kPreambleBytes + 2 * blocks) << spec;
    test::Buffer out(DType::kF32, n);
    decompress(stream, out.view());
    const double bound = std::string(spec) == "eb:rel=2"
                             ? expected_bound({spec, true, 2}, in.to_floats())
                             : std::stod(std::string(spec).substr(7));
    EXPECT_EQ(violations(in, out, bound, spec), 0u);
  }
}

TEST(EbCompression, ConstantAndNonFiniteTensorsUnderRel) {
  // A rel bound on a constant tensor resolves to 0: the values must come back exactly.
  for (float c : {3.7f, -1e-40f, 0.0f, -0.0f, kFloatMax}) {
    for (DType dtype : kDTypes) {
      const test::Buffer in = test::Buffer::from_floats(dtype, std::vector<float>(1000, c));
      const auto stream = compress(CodecConfig::parse("eb:rel=1e-3"), in.view());
      if (std::isfinite(in.to_floats()[0])) {  // FLT_MAX rounds to infinity in 16 bits
        EXPECT_LE(stream.size(), kStreamHeaderBytes + codec::eb::kPreambleBytes + 2 * 16) << c;
      }
      test::Buffer out(dtype, 1000);
      decompress(stream, out.view());
      EXPECT_EQ(violations(in, out, 0.0, "constant"), 0u) << c;
    }
  }
  std::vector<float> specials(300, std::nanf("0x155"));
  specials[7] = INFINITY;
  specials[8] = -INFINITY;
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, specials);
  test::Buffer out(DType::kF32, specials.size());
  decompress(compress(CodecConfig::parse("eb:rel=1e-2"), in.view()), out.view());
  EXPECT_TRUE(out.bits_equal(in));
}

TEST(EbSpec, CanonicalFormRoundTripsExactly) {
  EXPECT_EQ(CodecConfig::parse("eb:abs=1e-4").spec(), "eb:abs=0.0001");
  EXPECT_EQ(CodecConfig::parse(" eb : rel = 1e-3 ").spec(), "eb:rel=0.001");
  EXPECT_EQ(CodecConfig::parse("eb:abs=0.00001").spec(), "eb:abs=1e-05");
  for (double v : {0.1, 1.0 / 3.0, 1e-7, 0.1 + 0.2, 2.2250738585072014e-308, 1.7976931348623157e308,
                   123456.789, 1e-5}) {
    for (const char* key : {"abs", "rel"}) {
      char spec[64];
      std::snprintf(spec, sizeof(spec), "eb:%s=%.17g", key, v);
      const CodecConfig a = CodecConfig::parse(spec);
      const CodecConfig b = CodecConfig::parse(a.spec());
      EXPECT_EQ(b.spec(), a.spec()) << spec;
      EXPECT_EQ(b.codec().params().bytes, a.codec().params().bytes) << spec;
      EXPECT_EQ(a.codec().params().bytes,
                codec::find_codec(CodecId::kEb)->from_params(a.codec().params())->params().bytes)
          << spec;
    }
  }
}

TEST(EbSpec, RejectsBadSpecsNamingTheSpec) {
  const std::pair<const char*, const char*> cases[] = {
      {"eb", "abs"},           {"eb:abs=0", "abs"},
      {"eb:abs=-1", "abs"},    {"eb:abs=inf", "abs"},
      {"eb:rel=nan", "rel"},   {"eb:abs=1,rel=1", "rel=X"},
      {"eb:abs=x", "abs"},     {"eb:abs=1,block=64", "block"},
      {"eb:rel=1e999", "rel"}, {"eb:abs=1e-310", "abs"},
  };
  for (const auto& [spec, mention] : cases) {
    const std::string msg = test::spec_error(spec);
    ASSERT_FALSE(msg.empty()) << spec << " was accepted";
    EXPECT_NE(msg.find(spec), std::string::npos) << msg;
    EXPECT_NE(msg.find(mention), std::string::npos) << msg;
  }
}

TEST(EbSpec, RejectsInvalidHeaderParameters) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, {1, 2, 3});
  const auto good = compress(CodecConfig::parse("eb:abs=0.5"), in.view());
  const double bad_values[] = {0.0, -1.0, INFINITY, NAN};
  for (int trial = 0; trial < 6; ++trial) {
    auto stream = good;
    std::byte* params = stream.data() + 24;
    if (trial < 4) std::memcpy(params + 8, &bad_values[trial], 8);
    if (trial == 4) params[0] = std::byte{2};  // unknown mode
    if (trial == 5) params[3] = std::byte{1};  // reserved byte
    codec::reseal_stream(stream);
    test::Buffer out(DType::kF32, 3);
    EXPECT_THROW(decompress(stream, out.view()), CorruptStream) << trial;
  }
}

// Payload corruption behind the checksum: the codec's own validation.
class EbCorruption : public ::testing::Test {
 protected:
  // 64 gaussian values with NaNs at `nan_positions`, as an abs=1e-3 f32 payload.
  Payload block_with_outliers(std::initializer_list<size_t> nan_positions, size_t count = 64) {
    std::vector<float> v = make_data(DataKind::kGaussian, count, 4);
    for (size_t i : nan_positions) v[i] = NAN;
    in_ = test::Buffer::from_floats(DType::kF32, v);
    return encode_payload(config_, in_.view());
  }
  // Decodes with the fast path and the reference; both must reject.
  void expect_rejected(std::span<const std::byte> bytes, const std::string& what) {
    Payload p = aligned_copy(bytes);
    test::Buffer out(DType::kF32, in_.count());
    EXPECT_THROW(config_.codec().decode(p.bytes(), out.view()), CorruptStream) << what;
    EXPECT_THROW(codec::reference::eb_decode(p.bytes(), out.view()), CorruptStream) << what;
  }
  // Offset of the first block's outlier count: preamble, header byte, base.
  static size_t outlier_count_at(Payload& p) {
    size_t at = codec::eb::kPreambleBytes + 1;
    while (static_cast<uint8_t>(p.bytes()[at]) & 0x80) ++at;
    return at + 1;
  }

  const CodecConfig config_ = CodecConfig::parse("eb:abs=1e-3");
  test::Buffer in_{DType::kF32, 0};
};

TEST_F(EbCorruption, RejectsBadBitWidths) {
  Payload p = block_with_outliers({});
  const size_t at = codec::eb::kPreambleBytes;
  const uint8_t header = static_cast<uint8_t>(p.bytes()[at]);
  ASSERT_LE(header & 0x3f, 32);
  for (unsigned width = 33; width < 63; ++width) {
    Payload bad = aligned_copy(p.bytes());
    bad.bytes()[at] = std::byte((header & 0xc0) | width);
    expect_rejected(bad.bytes(), detail::concat("width ", width));
  }
  for (int verbatim_with_flags : {0x7f, 0xbf, 0xff}) {
    Payload bad = aligned_copy(p.bytes());
    bad.bytes()[at] = std::byte(verbatim_with_flags);
    expect_rejected(bad.bytes(), "verbatim marker with flags");
  }
}

TEST_F(EbCorruption, RejectsOutlierCountsPastTheEnd) {
  Payload p = block_with_outliers({5});
  const size_t at = outlier_count_at(p);
  ASSERT_EQ(static_cast<uint8_t>(p.bytes()[at]), 1);
  ASSERT_EQ(static_cast<uint8_t>(p.bytes()[at + 1]), 5);
  for (int count : {0, 64, 65, 255}) {
    Payload bad = aligned_copy(p.bytes());
    bad.bytes()[at] = std::byte(count);
    expect_rejected(bad.bytes(), detail::concat("outlier count ", int(count)));
  }
  for (int position : {64, 200}) {
    Payload bad = aligned_copy(p.bytes());
    bad.bytes()[at + 1] = std::byte(position);
    expect_rejected(bad.bytes(), detail::concat("outlier position ", int(position)));
  }
}

TEST_F(EbCorruption, RejectsUnorderedPositionsAndWrongBitmaps) {
  Payload two = block_with_outliers({5, 9});
  const size_t at = outlier_count_at(two);
  std::swap(two.bytes()[at + 1], two.bytes()[at + 2]);
  expect_rejected(two.bytes(), "decreasing positions");
  two.bytes()[at + 2] = two.bytes()[at + 1];
  expect_rejected(two.bytes(), "repeated position");

  Payload many = block_with_outliers({0, 3, 9, 17, 20, 33, 40, 41, 62, 63});
  const size_t count_at = outlier_count_at(many);
  ASSERT_EQ(static_cast<uint8_t>(many.bytes()[count_at]), 10);  // then an 8-byte bitmap
  Payload bad = aligned_copy(many.bytes());
  bad.bytes()[count_at + 1] ^= std::byte{0x02};  // an eleventh bit
  expect_rejected(bad.bytes(), "bitmap popcount");

  // A bitmap bit past a short block (13 values: 2 outliers take a 2-byte bitmap).
  Payload tail = block_with_outliers({0, 1}, 13);
  const size_t tail_at = outlier_count_at(tail);
  ASSERT_EQ(static_cast<uint8_t>(tail.bytes()[tail_at]), 2);
  ASSERT_EQ(static_cast<uint8_t>(tail.bytes()[tail_at + 1]), 0x03);
  ASSERT_EQ(static_cast<uint8_t>(tail.bytes()[tail_at + 2]), 0x00);
  tail.bytes()[tail_at + 1] = std::byte{0x01};
  tail.bytes()[tail_at + 2] = std::byte{0x80};  // same count, but bit 15 of 13
  expect_rejected(tail.bytes(), "bitmap bit past the block");
}

TEST_F(EbCorruption, RejectsBadBasesPreamblesAndTrailingBytes) {
  Payload p = block_with_outliers({});
  const size_t base_at = codec::eb::kPreambleBytes + 1;
  for (const std::vector<uint8_t>& base : {std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0xff},
                                           {0xff, 0xff, 0xff, 0xff, 0x1f},
                                           {0x80, 0x00}}) {
    Payload bad = aligned_copy(p.bytes());
    std::memcpy(bad.bytes().data() + base_at, base.data(), base.size());
    expect_rejected(bad.bytes(), "bad base");
  }
  const double bad_doubles[] = {NAN, INFINITY, -1.0, 0.0, 4e-3};
  for (size_t field : {0, 8}) {
    for (double v : bad_doubles) {
      if (field == 0 && v == 0.0) continue;   // a bound of 0 is valid (then the step is free)
      if (field == 0 && v == 4e-3) continue;  // a different bound only fails the step check
      Payload bad = aligned_copy(p.bytes());
      std::memcpy(bad.bytes().data() + field, &v, 8);
      expect_rejected(bad.bytes(), detail::concat("preamble field ", field, " = ", v));
    }
  }
  std::vector<std::byte> longer(p.bytes().begin(), p.bytes().end());
  longer.push_back(std::byte{0});
  expect_rejected(longer, "trailing byte");

  // Padding bits after the packed values of a 3-value tensor.
  Payload three = block_with_outliers({}, 3);
  const uint8_t header = static_cast<uint8_t>(three.bytes()[codec::eb::kPreambleBytes]);
  ASSERT_NE((3 * (header & 0x3f)) % 8, 0) << "needs a width that leaves padding bits";
  three.bytes()[three.size - 1] |= std::byte{0x80};
  expect_rejected(three.bytes(), "padding bits");

  test::Buffer empty(DType::kF32, 0);
  const std::byte one[8] = {};
  EXPECT_THROW(config_.codec().decode({one, 8}, empty.view()), CorruptStream);
}

TEST_F(EbCorruption, RejectsEveryTruncation) {
  Payload p = block_with_outliers({1, 2, 30, 100, 101, 102, 103, 104, 105, 106, 107}, 200);
  for (size_t cut = 0; cut < p.size; ++cut) {
    expect_rejected(p.bytes().first(cut), detail::concat("cut at ", cut));
  }
}

TEST_F(EbCorruption, FastAndReferenceAgreeOnGarbage) {
  // Both reject, or both decode to the same bits. Runs under the sanitizers in CI.
  std::mt19937 rng(17);
  size_t rejected = 0, trials = 0;
  for (DType dtype : kDTypes) {
    for (const char* spec : {"eb:abs=1e-3", "eb:rel=1e-5", "eb:abs=1e-7"}) {
      const test::Buffer in = test::Buffer::from_floats(dtype, test::data_with_specials(777, 3));
      const CodecConfig config = CodecConfig::parse(spec);
      Payload good = encode_payload(config, in.view());
      for (int trial = 0; trial < 300; ++trial, ++trials) {
        Payload bad = aligned_copy(good.bytes());
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) {
          const size_t at =
              codec::eb::kPreambleBytes + rng() % (bad.size - codec::eb::kPreambleBytes);
          bad.bytes()[at] =
              trial % 2 ? std::byte(rng()) : bad.bytes()[at] ^ std::byte(1u << (rng() % 8));
        }
        if (trial % 7 == 0) bad.size = rng() % bad.size;
        test::Buffer fast(dtype, in.count()), slow(dtype, in.count());
        bool fast_ok = true, slow_ok = true;
        try {
          config.codec().decode(bad.bytes(), fast.view());
        } catch (const CorruptStream&) {
          fast_ok = false;
        }
        try {
          codec::reference::eb_decode(bad.bytes(), slow.view());
        } catch (const CorruptStream&) {
          slow_ok = false;
        }
        ASSERT_EQ(fast_ok, slow_ok) << spec << " trial " << trial;
        if (fast_ok) {
          ASSERT_TRUE(fast.bits_equal(slow)) << spec << " trial " << trial;
        }
        rejected += fast_ok ? 0 : 1;
      }
    }
  }
  // Damage to packed values and raw outliers is undetectable without the checksum; measured: about
  // a fifth of the trials are rejected.
  EXPECT_GT(rejected, trials / 10) << "validation should catch some of the damage";
}

}  // namespace
}  // namespace hycc
