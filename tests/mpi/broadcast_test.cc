// broadcast: chain and native x codec x dtype x count; the in-place flag of the case selects
// the root instead (0, or the middle rank). Every rank, the root included, holds the same bits:
// the root's input exactly for lossless codecs, within one compression otherwise.
#include "coll_test_util.h"

namespace hycc::test {
namespace {

void run_broadcast_case(const Case& c) {
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = options_for(c);
  const bool lossless = o.codec.lossless();
  const int root = c.in_place ? p / 2 : 0;
  const std::string what = case_name(c) + " root " + std::to_string(root);
  const Buffer want = make_input(c.dtype, c.count, root, lossless);
  // Non-root ranks start from other data, which must be overwritten.
  Buffer buffer = make_input(c.dtype, c.count, r == root ? root : r + 100, lossless);
  broadcast(world(), buffer.view(), root, o);
  if (lossless) {
    expect_bits_equal(buffer, want, what);
  } else {
    expect_within(buffer, as_doubles(want.to_floats(), 0, c.count), compression_error(c.codec, 1),
                  1, what);
  }
  expect_identical_across_ranks(buffer, what);
}

class BroadcastTest : public ::testing::TestWithParam<Case> {};

TEST_P(BroadcastTest, MatchesRoot) { run_broadcast_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Chain, BroadcastTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kChain, test_codecs())),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(ChainStochastic, BroadcastTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kChain)), CaseName());
INSTANTIATE_TEST_SUITE_P(ChainMoreCodecs, BroadcastTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kChain)), CaseName());
INSTANTIATE_TEST_SUITE_P(FullLarge, BroadcastTest,
                         ::testing::ValuesIn(full_large_cases(Algorithm::kChain)), CaseName());
INSTANTIATE_TEST_SUITE_P(Native, BroadcastTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kNative, {"none"})), CaseName());

}  // namespace
}  // namespace hycc::test
