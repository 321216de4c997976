// allreduce: every algorithm x codec x dtype x count x in/out of place, against the reference
// (exact for lossless codecs on integer inputs, within the documented bound otherwise), with
// bit-identical results on every rank.
#include "coll_test_util.h"

namespace hycc::test {
namespace {

// The documented error of one allreduce algorithm on p ranks (docs/algorithms.md).
double allreduce_error(Algorithm a, const std::string& spec, int p) {
  switch (a) {
    case Algorithm::kRecursiveDoubling: {
      int p2 = 1;
      while (p2 * 2 <= p) p2 *= 2;
      const bool folded = p > p2;
      double e = folded ? compression_error(spec, 1) : 0;
      int m = folded ? 2 : 1;  // inputs in the largest partial sum
      for (int d = 1; d < p2; d <<= 1, m *= 2) e = 2 * (e + compression_error(spec, m));
      return e;
    }
    case Algorithm::kCompressOnce:
      return p * compression_error(spec, 1);
    default:  // ring: reduce-scatter, then one compression of the full sum
      return ring_reduce_scatter_error(spec, p) + compression_error(spec, p);
  }
}

int allreduce_compressions(Algorithm a, int p) { return a == Algorithm::kCompressOnce ? p : 2 * p; }

void run_allreduce_case(const Case& c) {
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = options_for(c);
  const bool lossless = o.codec.lossless();
  const Buffer input = make_input(c.dtype, c.count, r, lossless);
  const auto inputs = gather_all(input);
  const std::vector<ReduceOp> ops = c.count == kLargeCount
                                        ? std::vector<ReduceOp>{ReduceOp::kSum}
                                        : std::vector<ReduceOp>{ReduceOp::kSum, ReduceOp::kAverage};
  for (const ReduceOp op : ops) {
    const std::string what = case_name(c) + (op == ReduceOp::kSum ? " sum" : " average");
    Buffer in = clone(input), out(c.dtype, c.count);
    allreduce(world(), in.view(), c.in_place ? in.view() : out.view(), op, o);
    const Buffer& got = c.in_place ? in : out;
    if (lossless) {
      expect_bits_equal(got, reference_reduce(inputs, c.dtype, op), what);
    } else {
      expect_within(got, exact_reduce(inputs, op), allreduce_error(c.algorithm, c.codec, p),
                    allreduce_compressions(c.algorithm, p), what);
    }
    expect_identical_across_ranks(got, what);
    if (!c.in_place) {
      EXPECT_TRUE(in.bits_equal(input)) << what << ": the send buffer changed";
    }
  }
}

// Recursive doubling sends a rank's input in its own dtype (16-bit traffic stays 16-bit) and only
// the later partial sums as float32: on p2 = 2^L ranks without folds, each rank's streams hold
// n x 2 bytes of bf16 at level 1 and n x 4 bytes at each later level.
TEST(AllreduceWire, RecursiveDoublingKeepsSixteenBitInputsSixteenBit) {
  const int p = world().size();
  if (p < 2 || (p & (p - 1)) != 0) GTEST_SKIP() << "folds change the count at " << p << " ranks";
  const size_t n = 10000;
  Buffer in = make_input(DType::kBF16, n, world().rank(), true), out(DType::kBF16, n);
  CollectiveStats stats;
  CollectiveOptions o;
  o.codec = CodecConfig::parse("exphuff");
  o.algorithm = Algorithm::kRecursiveDoubling;
  o.threshold_bytes = 0;
  o.stats = &stats;
  allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o);
  int levels = 0;
  while ((1 << levels) < p) ++levels;
  EXPECT_EQ(stats.raw_bytes, n * 2 + n * 4 * static_cast<size_t>(levels - 1));
  EXPECT_LT(stats.wire_bytes, stats.raw_bytes);  // exphuff is lossless and compresses
  expect_bits_equal(out, reference_reduce(gather_all(in), DType::kBF16, ReduceOp::kSum),
                    "bf16 exphuff recursive doubling");
}

class AllreduceTest : public ::testing::TestWithParam<Case> {};

TEST_P(AllreduceTest, MatchesReference) { run_allreduce_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ring, AllreduceTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kRing, test_codecs())),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(RingUnevenSegments, AllreduceTest,
                         ::testing::ValuesIn(uneven_segment_cases(Algorithm::kRing)), CaseName());
// The main path also with 1000003 16-bit elements, every codec.
std::vector<Case> ring_large_16bit_cases() {
  std::vector<Case> cases;
  for (const std::string& codec : test_codecs()) {
    for (const DType d : {DType::kBF16, DType::kF16}) {
      cases.push_back({codec, d, kLargeCount, false, Algorithm::kRing, 64 << 10});
    }
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(RingLarge16, AllreduceTest, ::testing::ValuesIn(ring_large_16bit_cases()),
                         CaseName());
// Recursive doubling and compress-once are for small messages: 1000003 elements only with
// two codecs each.
INSTANTIATE_TEST_SUITE_P(RecursiveDoubling, AllreduceTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kRecursiveDoubling,
                                                        test_codecs(), false)),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(RecursiveDoublingLarge, AllreduceTest,
                         ::testing::Values(Case{"none", DType::kF32, kLargeCount, true,
                                                Algorithm::kRecursiveDoubling, 64 << 10},
                                           Case{"quant:bits=8", DType::kBF16, kLargeCount, false,
                                                Algorithm::kRecursiveDoubling, 64 << 10}),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(CompressOnce, AllreduceTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kCompressOnce, test_codecs(),
                                                        false)),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(CompressOnceLarge, AllreduceTest,
                         ::testing::Values(Case{"mpc", DType::kBF16, kLargeCount, true,
                                                Algorithm::kCompressOnce, 64 << 10},
                                           Case{"eb:abs=1e-3", DType::kF32, kLargeCount, false,
                                                Algorithm::kCompressOnce, 64 << 10}),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(RingStochastic, AllreduceTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(RecursiveDoublingStochastic, AllreduceTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kRecursiveDoubling)),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(CompressOnceStochastic, AllreduceTest,
                         ::testing::ValuesIn(stochastic_cases(Algorithm::kCompressOnce)),
                         CaseName());
// The native MPI path (codec none; bf16/f16 widened to float32).
INSTANTIATE_TEST_SUITE_P(RingMoreCodecs, AllreduceTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kRing)), CaseName());
INSTANTIATE_TEST_SUITE_P(RecursiveDoublingMoreCodecs, AllreduceTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kRecursiveDoubling)),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(CompressOnceMoreCodecs, AllreduceTest,
                         ::testing::ValuesIn(more_codec_cases(Algorithm::kCompressOnce)),
                         CaseName());
INSTANTIATE_TEST_SUITE_P(FullLarge, AllreduceTest,
                         ::testing::ValuesIn(full_large_cases(Algorithm::kRing, true)), CaseName());
INSTANTIATE_TEST_SUITE_P(Native, AllreduceTest,
                         ::testing::ValuesIn(make_cases(Algorithm::kNative, {"none"})), CaseName());

// kAuto below the threshold runs natively, uncompressed: exact even with a lossy codec.
TEST(AllreduceAuto, BelowThresholdIsExact) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse("quant:bits=4");
  const Buffer in = make_input(DType::kBF16, 1000, world().rank(), true);
  Buffer out(DType::kBF16, 1000);
  allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o);
  expect_bits_equal(out, reference_reduce(gather_all(in), DType::kBF16, ReduceOp::kSum),
                    "auto below threshold");
}

// kAuto above the threshold: recursive doubling up to 256 KiB, the ring above.
TEST(AllreduceAuto, AboveThresholdCompressesWithinBound) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse("eb:abs=1e-3");
  const int p = world().size();
  for (const size_t n : {size_t{30000}, size_t{100000}}) {
    const Buffer in = make_input(DType::kF32, n, world().rank(), false);
    Buffer out(DType::kF32, n);
    allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o);
    const Algorithm a = n * 4 <= (256 << 10) ? Algorithm::kRecursiveDoubling : Algorithm::kRing;
    expect_within(out, exact_reduce(gather_all(in), ReduceOp::kSum),
                  allreduce_error(a, o.codec.spec(), p), 2 * p, "auto n=" + std::to_string(n));
    expect_identical_across_ranks(out, "auto n=" + std::to_string(n));
  }
}

}  // namespace
}  // namespace hycc::test
