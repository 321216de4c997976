// Performance model: the iteration of a small configuration against hand-computed volumes and
// times, the bubble fraction, overlap, and a policy that changes nothing.
#include <gtest/gtest.h>

#include "iteration.h"
#include "report.h"
#include "sim_test_util.h"

namespace hycc::sim {
namespace {

const DimensionTraffic& traffic(const IterationResult& r, Dimension d) {
  for (const DimensionTraffic& t : r.traffic) {
    if (t.dimension == d) return t;
  }
  throw std::logic_error("no such dimension");
}

TEST(SimIteration, BubbleFraction) {
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 8), 0);
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 32), 3.0 / 35);
  EXPECT_DOUBLE_EQ(bubble_fraction(2, 1), 0.5);
}

TEST(SimIteration, VolumesPerDimensionByHand) {
  const IterationResult r = simulate(testing::small_model(), testing::small_cluster(),
                                     testing::small_layout(), SimPolicy::baseline());
  // Activations of a micro-batch: b s h x 4 bytes = 2 x 4 x 8 x 4 = 256 bytes.
  const DimensionTraffic& tp = traffic(r, Dimension::kTp);
  EXPECT_EQ(tp.calls, 3 * 2 * 4);  // m x layers per stage x (2 forward + 2 backward)
  EXPECT_DOUBLE_EQ(tp.message_bytes, 256);
  EXPECT_DOUBLE_EQ(tp.raw_bytes, 24 * 256.0);  // ring of 2: 2 (n-1)/n = 1
  const DimensionTraffic& pp = traffic(r, Dimension::kPp);
  EXPECT_EQ(pp.calls, 3 * 2);  // activations forward and gradients backward per micro-batch
  EXPECT_DOUBLE_EQ(pp.raw_bytes, 6 * 256.0);
  // Gradients of a stage with the embedding: (2 layers x 872 + 128) / tp 2 = 936 values.
  const DimensionTraffic& dp = traffic(r, Dimension::kDp);
  EXPECT_EQ(dp.calls, 1);
  EXPECT_DOUBLE_EQ(dp.message_bytes, 936 * 4.0);
  EXPECT_DOUBLE_EQ(dp.raw_bytes, 936 * 4.0);
  const DimensionTraffic& emb = traffic(r, Dimension::kEmbedding);
  EXPECT_EQ(emb.calls, 1);
  EXPECT_DOUBLE_EQ(emb.message_bytes, 16 * 8 / 2 * 4.0);
  EXPECT_EQ(traffic(r, Dimension::kZeroGrad).calls, 0);
  EXPECT_EQ(traffic(r, Dimension::kZeroParam).calls, 0);
}

TEST(SimIteration, TimesByHand) {
  const IterationResult r = simulate(testing::small_model(), testing::small_cluster(),
                                     testing::small_layout(), SimPolicy::baseline());
  // Compute: 20736 flop per token x 8 tokens / 4 GPUs / 41472 flop/s = 1 s per micro-batch.
  EXPECT_DOUBLE_EQ(r.micro_batch_compute, 1);
  const Breakdown& b = r.time;
  EXPECT_DOUBLE_EQ(b.compute, 3);
  EXPECT_DOUBLE_EQ(b.tp, 3 * 8 * 1.0);  // 8 allreduces of 256 B at 256 B/s per micro-batch
  EXPECT_DOUBLE_EQ(b.pp, 3 * 2 * 1.0);  // 2 x 256 B at 1024 / 4 flows B/s
  EXPECT_DOUBLE_EQ(b.bubble, 1 * (1 + 8 + 2));
  // Gradient allreduce within a node (3744 B at 256 B/s) + embedding across nodes (256 B at
  // 1024 / 4 B/s).
  EXPECT_DOUBLE_EQ(b.dp, 3744 / 256.0 + 1);
  EXPECT_DOUBLE_EQ(b.codec, 0);
  EXPECT_DOUBLE_EQ(b.iteration, 3 + 24 + 6 + 11 + 14.625 + 1);
  EXPECT_DOUBLE_EQ(r.samples_per_iteration, 2 * 3 * 2);
  EXPECT_DOUBLE_EQ(r.tflops_per_gpu, 20736.0 * 12 * 4 / (b.iteration * 8) / 1e12);
}

TEST(SimIteration, OverlapHidesTheGradientReduction) {
  LayoutConfig l = testing::small_layout();
  l.overlap_dp = true;
  const IterationResult r =
      simulate(testing::small_model(), testing::small_cluster(), l, SimPolicy::baseline());
  // The backward pass of the last micro-batch (2/3 of 1 s) hides that much of the allreduce.
  EXPECT_NEAR(r.time.dp_hidden, 2.0 / 3, 1e-12);
  EXPECT_NEAR(r.time.dp, 3744 / 256.0 - 2.0 / 3 + 1, 1e-12);
}

TEST(SimIteration, ZeroSplitsTheGradientTraffic) {
  LayoutConfig l = testing::small_layout();
  l.zero_stage = 1;
  const IterationResult r =
      simulate(testing::small_model(), testing::small_cluster(), l, SimPolicy::baseline());
  EXPECT_EQ(traffic(r, Dimension::kDp).calls, 0);
  // Reduce-scatter and allgather of 3744 B over 2 ranks: (n-1)/n = 1/2 each.
  EXPECT_DOUBLE_EQ(traffic(r, Dimension::kZeroGrad).raw_bytes, 1872);
  EXPECT_DOUBLE_EQ(traffic(r, Dimension::kZeroParam).raw_bytes, 1872);
}

TEST(SimIteration, RatioOneAndFreeCodecChangeNothing) {
  const SimPolicy same = SimPolicy::parse_figures(
      "name = \"same\"\n[default]\ncodec = \"identity\"\nratio = 1.0\n", "same.toml");
  const auto runs = compare_policies(testing::small_model(), testing::small_cluster(),
                                     testing::small_layout(), {same});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_DOUBLE_EQ(runs[0].speedup, 1);
  EXPECT_EQ(traffic(runs[0].result, Dimension::kTp).codec.codec, "identity");
}

TEST(SimIteration, CompressionOnlyWhereThePolicySaysSo) {
  const SimPolicy dp_only = SimPolicy::parse_figures(
      "[dp]\nratio = 4.0\ncompress_gbps = 1e-6\ndecompress_gbps = 1e-6\n", "dp.toml");
  const auto runs = compare_policies(testing::small_model(), testing::small_cluster(),
                                     testing::small_layout(), {dp_only});
  const IterationResult& r = runs[0].result;
  EXPECT_DOUBLE_EQ(traffic(r, Dimension::kTp).wire_bytes, traffic(r, Dimension::kTp).raw_bytes);
  const DimensionTraffic& dp = traffic(r, Dimension::kDp);
  EXPECT_DOUBLE_EQ(dp.wire_bytes, 3744 / 4.0);
  // Codec at 1000 B/s: compress S = 3744 B, decompress 2 (n-1)/n S = 3744 B.
  EXPECT_NEAR(r.time.codec, 2 * 3744 / 1000.0, 1e-9);
  EXPECT_NEAR(r.time.dp, 3744 / 4.0 / 256 + 1, 1e-12);
  EXPECT_GT(runs[0].speedup, 1);
}

}  // namespace
}  // namespace hycc::sim
