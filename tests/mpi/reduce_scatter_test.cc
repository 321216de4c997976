// reduce_scatter: ring and native x codec x dtype x count x in/out of place, against the chunk
// of the reference reduction (exact for lossless codecs, within (p-1) compressions otherwise).
#include "coll_test_util.h"

namespace hycc::test {
namespace {

void run_reduce_scatter_case(const Case& c) {
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = options_for(c);
  const bool lossless = o.codec.lossless();
  const Buffer input = make_input(c.dtype, c.count, r, lossless);
  const auto inputs = gather_all(input);
  const ChunkRange mine = chunk_range(c.count, p, r);
  for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    if (c.count == kLargeCount && op == ReduceOp::kAverage) continue;
    const std::string what = case_name(c) + (op == ReduceOp::kSum ? " sum" : " average");
    Buffer in = clone(input), out(c.dtype, mine.count);
    // In place, the result lands on this rank's chunk of the send buffer.
    reduce_scatter(world(), in.view(),
                   c.in_place ? view_of(in, mine.offset, mine.count) : out.view(), op, o);
    const Buffer got = c.in_place ? part_of(in, mine.offset, mine.count) : clone(out);
    if (lossless) {
      expect_bits_equal(
          got, part_of(reference_reduce(inputs, c.dtype, op), mine.offset, mine.count), what);
    } else {
      const std::vector<double> exact = exact_reduce(inputs, op);
      expect_within(got,
                    {exact.begin() + static_cast<std::ptrdiff_t>(mine.offset),
                     exact.begin() + static_cast<std::ptrdiff_t>(mine.offset + mine.count)},
                    ring_reduce_scatter_error(c.codec, p), p, what);
    }
    if (c.in_place) {
      // Only this rank's chunk is written: the rest of the buffer keeps the input's bits.
      const size_t end = mine.offset + mine.count;
      EXPECT_TRUE(part_of(in, 0, mine.offset).bits_equal(part_of(input, 0, mine.offset)) &&
                  part_of(in, end, c.count - end).bits_equal(part_of(input, end, c.count - end)))
          << what << ": in place, the buffer changed outside this rank's chunk";
    } else {
      EXPECT_TRUE(in.bits_equal(input)) << what << ": the send buffer changed";
    }
  }
}

class ReduceScatterTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceScatterTest, MatchesReference) { run_reduce_scatter_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ring, ReduceScatterTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kRing, test_codecs())),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(RingUnevenSegments, ReduceScatterTest,
                         ::testing::ValuesIn(uneven_segment_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(RingStochastic, ReduceScatterTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(RingMoreCodecs, ReduceScatterTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(FullLarge, ReduceScatterTest,
                         ::testing::ValuesIn(full_large_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(Native, ReduceScatterTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kNative, {"none"})), CaseName());

TEST(ReduceScatterChunks, AreBalancedAndCoverTheTensor) {
  for (const size_t total : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
    for (const int p : {1, 2, 3, 4, 8}) {
      size_t next = 0;
      for (int j = 0; j < p; ++j) {
        const ChunkRange c = chunk_range(total, p, j);
        EXPECT_EQ(c.offset, next);
        EXPECT_LE(c.count, total / static_cast<size_t>(p) + 1);
        EXPECT_GE(c.count, total / static_cast<size_t>(p));
        next += c.count;
      }
      EXPECT_EQ(next, total);
    }
  }
  EXPECT_THROW(chunk_range(10, 2, 2), InvalidArgument);
}

}  // namespace
}  // namespace hycc::test
