// Performance model: ring factors, steps, codec work and the alpha-beta time of one collective.
#include <gtest/gtest.h>

#include "collective_time.h"

namespace hycc::sim {
namespace {

TEST(SimCollective, RingFactors) {
  EXPECT_DOUBLE_EQ(ring_factor(Collective::kAllreduce, 4), 1.5);  // 2 (n-1)/n
  EXPECT_DOUBLE_EQ(ring_factor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(ring_factor(Collective::kAllgather, 8), 0.875);
  EXPECT_DOUBLE_EQ(ring_factor(Collective::kSendRecv, 8), 1);
  EXPECT_DOUBLE_EQ(ring_factor(Collective::kAllreduce, 1), 0);
  EXPECT_EQ(ring_steps(Collective::kAllreduce, 4), 6);
  EXPECT_EQ(ring_steps(Collective::kReduceScatter, 4), 3);
  EXPECT_EQ(ring_steps(Collective::kSendRecv, 4), 1);
}

TEST(SimCollective, CodecWorkPerAlgorithm) {
  // Allreduce: reduce-scatter recompresses at each of n-1 hops, the allgather compresses its
  // chunk once: n chunks of S/n compressed, 2 (n-1) decompressed.
  EXPECT_DOUBLE_EQ(compressed_share(Collective::kAllreduce, 4), 1);
  EXPECT_DOUBLE_EQ(decompressed_share(Collective::kAllreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(compressed_share(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(decompressed_share(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(compressed_share(Collective::kAllgather, 4), 0.25);
  EXPECT_DOUBLE_EQ(decompressed_share(Collective::kAllgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(compressed_share(Collective::kSendRecv, 4), 1);
}

TEST(SimCollective, AlphaBetaTimeByHand) {
  GroupLinks links;
  links.group_size = 4;
  links.bandwidth = 1000;  // B/s
  links.latency = 0.5;     // s
  const CodecFigures none;
  const CollectiveTime t = collective_time(Collective::kAllreduce, 4000, links, none);
  EXPECT_DOUBLE_EQ(t.raw_bytes, 6000);
  EXPECT_DOUBLE_EQ(t.wire_bytes, 6000);
  EXPECT_DOUBLE_EQ(t.transfer, 6 * 0.5 + 6.0);
  EXPECT_DOUBLE_EQ(t.codec, 0);

  CodecFigures c{"quant", 4, 2000, 8000};
  const CollectiveTime z = collective_time(Collective::kAllreduce, 4000, links, c);
  EXPECT_DOUBLE_EQ(z.wire_bytes, 1500);
  EXPECT_DOUBLE_EQ(z.transfer, 3 + 1.5);
  EXPECT_DOUBLE_EQ(z.codec, 4000 / 2000.0 + 1.5 * 4000 / 8000.0);

  c.compress_bandwidth = c.decompress_bandwidth = 0;  // free codec
  EXPECT_DOUBLE_EQ(collective_time(Collective::kAllreduce, 4000, links, c).codec, 0);

  links.group_size = 1;  // alone: nothing to send
  EXPECT_DOUBLE_EQ(collective_time(Collective::kAllreduce, 4000, links, c).total(), 0);
}

}  // namespace
}  // namespace hycc::sim
