// Every codec x dtype x count: compress, inspect, decompress. Lossless codecs must be bit-exact
// (special values included); lossy codecs must stay close and keep NaN and infinities.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "hycc/codec.h"
#include "test_util.h"

namespace hycc {
namespace {

struct SpecCase {
  const char* spec;
  double rel_l2_tol;  // on gaussian data; 0 means bit-exact
};

const SpecCase kSpecs[] = {
    {"none", 0},
    {"bf16", 5e-3},
    {"fp16", 1e-3},
    {"quant:bits=8", 1.5e-2},
    {"quant:bits=4,block=32", 0.15},
    {"quant:bits=1", 1.75},  // two levels per block: the block min and max
    {"quant:bits=3,round=stochastic", 0.5},
    {"eb:abs=1e-3", 1e-2},
    {"eb:rel=1e-4", 1e-2},
    {"zfp:rate=8", 0.15},
    {"zfp:rate=16", 2e-3},
    {"zfp:accuracy=1e-3", 1e-2},
    {"mpc", 0},
    {"mpc:dim=2", 0},
    {"zstd:level=1", 0},
    {"zstd:level=3", 0},
    {"exphuff", 0},
    {"exphuff:block=256", 0},
};

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
const size_t kCounts[] = {0, 1, 3, 4097, size_t{1} << 20};

using Param = std::tuple<SpecCase, DType, size_t>;

class CodecRoundTrip : public ::testing::TestWithParam<Param> {};

TEST_P(CodecRoundTrip, DecodesWhatItEncoded) {
  const auto& [sc, dtype, count] = GetParam();
  const CodecConfig config = CodecConfig::parse(sc.spec);
  const test::Buffer in = test::Buffer::from_floats(dtype, make_data(DataKind::kGaussian, count));

  std::vector<std::byte> stream(max_compressed_bytes(config, in.view()));
  const size_t n = compress(config, in.view(), stream, CompressOptions{42});
  ASSERT_LE(n, stream.size());
  stream.resize(n);

  const StreamInfo info = inspect(stream);
  EXPECT_EQ(info.count, count);
  EXPECT_EQ(info.dtype, dtype);
  EXPECT_EQ(info.stream_bytes(), n);
  EXPECT_EQ(info.spec, config.spec());
  EXPECT_EQ(CodecConfig::parse(info.spec).spec(), config.spec());

  test::Buffer out(dtype, count);
  decompress(stream, out.view());
  if (sc.rel_l2_tol == 0 || (config.id() == CodecId::kBF16 && dtype == DType::kBF16) ||
      (config.id() == CodecId::kFP16 && dtype == DType::kF16)) {
    EXPECT_TRUE(out.bits_equal(in)) << sc.spec << " must be bit-exact";
  } else {
    const double tol = dtype == DType::kF32 ? sc.rel_l2_tol : std::max(sc.rel_l2_tol, 1e-2);
    EXPECT_LE(test::rel_l2_error(in.to_floats(), out.to_floats()), tol) << sc.spec;
  }

  // Same input, options and codec: the same stream, byte for byte.
  EXPECT_EQ(compress(config, in.view(), CompressOptions{42}), stream);
}

TEST_P(CodecRoundTrip, KeepsSpecialValues) {
  const auto& [sc, dtype, count] = GetParam();
  const CodecConfig config = CodecConfig::parse(sc.spec);
  const test::Buffer in = test::Buffer::from_floats(dtype, test::data_with_specials(count));
  test::Buffer out(dtype, count);
  decompress(compress(config, in.view()), out.view());
  if (config.lossless()) {
    EXPECT_TRUE(out.bits_equal(in)) << sc.spec << " must be bit-exact on special values";
    return;
  }
  // quant keeps an infinity exactly where its block holds no other kind of non-finite value,
  // and decodes the others as NaN (codec_quant.cc, special blocks).
  const bool mixed_become_nan = config.id() == CodecId::kQuant;
  const std::vector<float> a = in.to_floats(), b = out.to_floats();
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::isnan(a[i]) && !std::isnan(b[i])) ++bad;
    if (std::isinf(a[i]) && a[i] != b[i] && !(mixed_become_nan && std::isnan(b[i]))) ++bad;
  }
  EXPECT_EQ(bad, 0u) << sc.spec << " lost NaN or infinity";
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string s = std::get<0>(info.param).spec;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s + "_" + std::string(dtype_name(std::get<1>(info.param))) + "_n" +
         std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecRoundTrip,
                         ::testing::Combine(::testing::ValuesIn(kSpecs),
                                            ::testing::ValuesIn(kDTypes),
                                            ::testing::ValuesIn(kCounts)),
                         param_name);

}  // namespace
}  // namespace hycc
