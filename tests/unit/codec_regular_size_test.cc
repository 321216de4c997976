// regular_compressed_bytes: the size of a stream of regular data where the codec's size depends
// only on dtype and count. Every codec that claims one writes exactly that many bytes for
// gaussian and smooth data of every dtype and many counts, more (up to max_compressed_bytes)
// for data with NaN, infinities and extremes; codecs whose size depends on the data claim none.
#include <gtest/gtest.h>

#include "test_util.h"

namespace hycc {
namespace {

const char* const kFixed[] = {"none",
                              "bf16",
                              "fp16",
                              "quant:bits=1",
                              "quant:bits=4",
                              "quant:bits=8,block=8",
                              "quant:bits=3,block=1024,round=stochastic",
                              "zfp:rate=2.25",
                              "zfp:rate=4",
                              "zfp:rate=8.5",
                              "zfp:rate=32"};
const char* const kVariable[] = {"eb:abs=1e-3", "mpc", "zstd", "zfp:accuracy=1e-3"};

TEST(CodecRegularSize, FixedSizeCodecsWriteExactlyTheRegularSizeForRegularData) {
  for (const char* spec : kFixed) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (size_t count :
           {size_t{0}, size_t{1}, size_t{3}, size_t{64}, size_t{1000}, size_t{100003}}) {
        const std::optional<size_t> regular = regular_compressed_bytes(config, dtype, count);
        ASSERT_TRUE(regular.has_value()) << spec;
        ASSERT_LE(*regular, max_compressed_bytes(config, dtype, count)) << spec;
        for (DataKind kind : {DataKind::kGaussian, DataKind::kSmooth}) {
          const test::Buffer in = test::Buffer::from_floats(dtype, make_data(kind, count, 5));
          EXPECT_EQ(compress(config, in.view()).size(), *regular)
              << spec << " " << dtype_name(dtype) << " count " << count;
        }
        if (count < 64) continue;
        const test::Buffer special =
            test::Buffer::from_floats(dtype, test::data_with_specials(count));
        const size_t bytes = compress(config, special.view()).size();
        EXPECT_GE(bytes, *regular) << spec;
        EXPECT_LE(bytes, max_compressed_bytes(config, dtype, count)) << spec;
      }
    }
  }
}

TEST(CodecRegularSize, DataDependentCodecsClaimNone) {
  for (const char* spec : kVariable) {
    EXPECT_FALSE(regular_compressed_bytes(CodecConfig::parse(spec), DType::kF32, 1000)) << spec;
  }
}

}  // namespace
}  // namespace hycc
