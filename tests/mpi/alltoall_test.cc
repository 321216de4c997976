// alltoall: pairwise and native x codec x dtype x block size x in/out of place. Block i of the
// result is block r of rank i's input (exactly for lossless codecs, within one compression
// otherwise); this rank's own block is copied exactly. Case counts are elements per block, the
// large case uses 1000003 / p per block (about 1000003 elements in all).
#include "coll_test_util.h"

namespace hycc::test {
namespace {

void run_alltoall_case(const Case& c) {
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = options_for(c);
  const bool lossless = o.codec.lossless();
  const size_t block = c.count == kLargeCount ? kLargeCount / static_cast<size_t>(p) : c.count;
  const size_t n = block * static_cast<size_t>(p);
  const std::string what = case_name(c);
  const Buffer input = make_input(c.dtype, n, r, lossless);
  Buffer in = clone(input), out(c.dtype, n);
  alltoall(world(), in.view(), c.in_place ? in.view() : out.view(), o);
  const Buffer& result = c.in_place ? in : out;
  for (int i = 0; i < p; ++i) {
    const Buffer got = part_of(result, static_cast<size_t>(i) * block, block);
    const Buffer want = make_input(c.dtype, block, i, lossless, static_cast<size_t>(r) * block);
    const std::string from = what + " block from " + std::to_string(i);
    if (lossless || i == r) {
      expect_bits_equal(got, want, from);
    } else {
      expect_within(got, as_doubles(want.to_floats(), 0, block), compression_error(c.codec, 1), 1,
                    from);
    }
  }
  if (!c.in_place) {
    EXPECT_TRUE(in.bits_equal(input)) << what << ": the send buffer changed";
  }
}

class AlltoallTest : public ::testing::TestWithParam<Case> {};

TEST_P(AlltoallTest, DeliversBlocks) { run_alltoall_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Pairwise, AlltoallTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kPairwise, test_codecs())),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(PairwiseStochastic, AlltoallTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kPairwise)), CaseName());
INSTANTIATE_TEST_SUITE_P(PairwiseMoreCodecs, AlltoallTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kPairwise)), CaseName());
INSTANTIATE_TEST_SUITE_P(FullLarge, AlltoallTest,
                         ::testing::ValuesIn(full_large_cases(Algorithm::kPairwise)), CaseName());
INSTANTIATE_TEST_SUITE_P(Native, AlltoallTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kNative, {"none"})), CaseName());

}  // namespace
}  // namespace hycc::test
