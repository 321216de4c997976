// allgather: ring and native x codec x dtype x count (elements per rank) x in/out of place.
// Block j of the result is rank j's input (exactly for lossless codecs, within one compression
// otherwise), and every rank, rank j included, holds the same bits.
#include "coll_test_util.h"

namespace hycc::test {
namespace {

void run_allgather_case(const Case& c) {
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = options_for(c);
  const bool lossless = o.codec.lossless();
  const size_t n = c.count;  // per rank
  const std::string what = case_name(c);
  const Buffer input = make_input(c.dtype, n, r, lossless);
  Buffer out(c.dtype, n * static_cast<size_t>(p));
  Buffer in = clone(input);
  if (c.in_place) {  // the send view is this rank's block of the receive buffer
    const TensorView own = view_of(out, static_cast<size_t>(r) * n, n);
    if (n != 0) std::memcpy(own.data, input.view().data, input.view().bytes());
    allgather(world(), own, out.view(), o);
  } else {
    allgather(world(), in.view(), out.view(), o);
    EXPECT_TRUE(in.bits_equal(input)) << what << ": the send buffer changed";
  }
  for (int j = 0; j < p; ++j) {
    const Buffer got = part_of(out, static_cast<size_t>(j) * n, n);
    const Buffer want = make_input(c.dtype, n, j, lossless);
    const std::string block = what + " block " + std::to_string(j);
    if (lossless) {
      expect_bits_equal(got, want, block);
    } else {
      expect_within(got, as_doubles(want.to_floats(), 0, n), compression_error(c.codec, 1), 1,
                    block);
    }
  }
  expect_identical_across_ranks(out, what);
}

class AllgatherTest : public ::testing::TestWithParam<Case> {};

TEST_P(AllgatherTest, MatchesInputs) { run_allgather_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ring, AllgatherTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kRing, test_codecs())),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(RingUnevenSegments, AllgatherTest,
                         ::testing::ValuesIn(uneven_segment_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(RingStochastic, AllgatherTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(RingMoreCodecs, AllgatherTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(FullLarge, AllgatherTest,
                         ::testing::ValuesIn(full_large_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(Native, AllgatherTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kNative, {"none"})), CaseName());

}  // namespace
}  // namespace hycc::test
