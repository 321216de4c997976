// Golden checksums of the streams every codec writes and of what it decodes from them, for fixed
// inputs: any change to a wire format or to the arithmetic of a fast path shows up here. A
// refactor (e.g. moving per-block logic into functions shared with the GPU path) must leave
// every value unchanged. On a mismatch the test prints the new value; update the table only
// for an intended format change.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/xxh3.h"
#include "hycc/codec.h"
#include "test_util.h"

namespace hycc {
namespace {

struct GoldenCase {
  const char* spec;
  DType dtype;
  uint64_t stream_sum;   // XXH3-64 of the whole stream (header included)
  uint64_t decoded_sum;  // XXH3-64 of the decoded elements
};

// Inputs: gaussian values with NaN, infinities, signed zeros, denormals and extremes every 37
// elements, followed by a smooth stretch and a run of tiny values; 10007 elements (partial last
// blocks for every block size). Seed 42 for stochastic rounding.
std::vector<float> golden_input() {
  std::vector<float> v = test::data_with_specials(6007, 11);
  const std::vector<float> smooth = make_data(DataKind::kSmooth, 3000, 5);
  v.insert(v.end(), smooth.begin(), smooth.end());
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<float>(i % 7 - 3) * 1e-39f);
  return v;
}

const GoldenCase kGolden[] = {
#include "codec_golden_values.inc"
};

class CodecGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(CodecGolden, StreamAndDecodedChecksumsAreUnchanged) {
  const GoldenCase& gc = GetParam();
  const CodecConfig config = CodecConfig::parse(gc.spec);
  const test::Buffer in = test::Buffer::from_floats(gc.dtype, golden_input());
  std::vector<std::byte> stream(max_compressed_bytes(config, in.view()));
  stream.resize(compress(config, in.view(), stream, CompressOptions{42}));
  test::Buffer out(gc.dtype, in.count());
  decompress(stream, out.view());
  const uint64_t stream_sum = xxh3(stream.data(), stream.size());
  const uint64_t decoded_sum = xxh3(out.data(), out.count() * dtype_size(gc.dtype));
  if (stream_sum != gc.stream_sum || decoded_sum != gc.decoded_sum) {
    std::printf("    {\"%s\", DType::k%s, 0x%016llxull, 0x%016llxull},\n", gc.spec,
                gc.dtype == DType::kF32 ? "F32" : (gc.dtype == DType::kBF16 ? "BF16" : "F16"),
                static_cast<unsigned long long>(stream_sum),
                static_cast<unsigned long long>(decoded_sum));
  }
  EXPECT_EQ(stream_sum, gc.stream_sum) << gc.spec;
  EXPECT_EQ(decoded_sum, gc.decoded_sum) << gc.spec;
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecGolden, ::testing::ValuesIn(kGolden),
                         [](const auto& param_info) { return std::to_string(param_info.index); });

}  // namespace
}  // namespace hycc
