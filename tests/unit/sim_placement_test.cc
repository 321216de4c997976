// Performance model: rank order, groups and the link class their placement gives.
#include <gtest/gtest.h>

#include "experiment.h"
#include "placement.h"
#include "sim_test_util.h"

namespace hycc::sim {
namespace {

TEST(SimPlacement, MegatronRankOrder) {
  const LayoutConfig l = testing::small_layout();  // tp 2, dp 2, pp 2, order tp,dp,pp
  EXPECT_EQ(world_rank(l, 1, 0, 0), 1);
  EXPECT_EQ(world_rank(l, 0, 1, 0), 2);
  EXPECT_EQ(world_rank(l, 0, 0, 1), 4);
  EXPECT_EQ(world_rank(l, 1, 1, 1), 7);
  const auto tp = groups_of(l, Axis::kTp);
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_EQ(tp[0], (std::vector<long>{0, 1}));
  const auto dp = groups_of(l, Axis::kDp);
  EXPECT_EQ(dp[0], (std::vector<long>{0, 2}));
  const auto pp = groups_of(l, Axis::kPp);
  EXPECT_EQ(pp[0], (std::vector<long>{0, 4}));
  EXPECT_EQ(embedding_groups(l)[3], (std::vector<long>{3, 7}));
}

TEST(SimPlacement, LinkClassFromPlacement) {
  const ClusterConfig c = testing::small_cluster();  // 4 GPUs per node
  LayoutConfig l = testing::small_layout();
  // tp and dp fit in a node (tp * dp = 4 <= 4); the pipeline crosses nodes, four flows leave each.
  const GroupLinks tp = links_of(groups_of(l, Axis::kTp), Pattern::kRing, c);
  EXPECT_EQ(tp.kind, LinkKind::kIntraNode);
  EXPECT_DOUBLE_EQ(tp.bandwidth, 256);
  EXPECT_EQ(links_of(groups_of(l, Axis::kDp), Pattern::kRing, c).kind, LinkKind::kIntraNode);
  const GroupLinks pp = links_of(groups_of(l, Axis::kPp), Pattern::kChain, c);
  EXPECT_EQ(pp.kind, LinkKind::kInterNode);
  EXPECT_EQ(pp.flows_per_node, 4);
  EXPECT_DOUBLE_EQ(pp.bandwidth, 1024.0 / 4);

  // Order tp,pp,dp puts the pipeline within a node and data parallelism across nodes.
  l.order = {Axis::kTp, Axis::kPp, Axis::kDp};
  EXPECT_EQ(links_of(groups_of(l, Axis::kPp), Pattern::kChain, c).kind, LinkKind::kIntraNode);
  const GroupLinks dp = links_of(groups_of(l, Axis::kDp), Pattern::kRing, c);
  EXPECT_EQ(dp.kind, LinkKind::kInterNode);
  EXPECT_EQ(dp.flows_per_node, 4);  // each of the 4 rings of 2 sends once out of each node

  // tp larger than a node: the tensor-parallel ring crosses nodes, one edge out of each node.
  LayoutConfig wide;
  wide.tp = 8;
  wide.dp = 1;
  const GroupLinks t8 = links_of(groups_of(wide, Axis::kTp), Pattern::kRing, c);
  EXPECT_EQ(t8.kind, LinkKind::kInterNode);
  EXPECT_EQ(t8.flows_per_node, 1);
  EXPECT_DOUBLE_EQ(t8.latency, c.inter_node.latency);
}

TEST(SimPlacement, NeoXDataParallelRingsShareTheNode) {
  // 48 nodes x 4 GPUs, tp 2 x dp 24 x pp 4: each node holds 2 dp ranks of 2 tp rings, so two
  // data-parallel rings leave every node; pipeline stages are 12 nodes apart, all 4 GPUs send.
  ClusterConfig c;
  c.nodes = 48;
  c.gpus_per_node = 4;
  c.inter_node = {12.5e9, 0};
  LayoutConfig l;
  l.tp = 2;
  l.pp = 4;
  l.dp = 24;
  const GroupLinks dp = links_of(groups_of(l, Axis::kDp), Pattern::kRing, c);
  EXPECT_EQ(dp.kind, LinkKind::kInterNode);
  EXPECT_EQ(dp.flows_per_node, 2);
  EXPECT_EQ(links_of(groups_of(l, Axis::kPp), Pattern::kChain, c).flows_per_node, 4);
  EXPECT_EQ(links_of(groups_of(l, Axis::kTp), Pattern::kRing, c).kind, LinkKind::kIntraNode);
}

// The experiment on tools/netemu --hosts 4 --ranks-per-host 2: tp pairs share a node; dp, pp and
// the embedding cross nodes, and both ranks of a node send at once, so each flow gets half of the
// host link (payload share 0.955 of the rate).
TEST(SimPlacement, TwoRanksShareTheHostLinkOfTheExperiment) {
  const ClusterConfig c = load_cluster("netemu-4x2");
  const LayoutConfig l = load_layout("tiny-dp2-tp2-pp2");
  const GroupLinks tp = links_of(groups_of(l, Axis::kTp), Pattern::kRing, c);
  EXPECT_EQ(tp.kind, LinkKind::kIntraNode);
  const double flow = 100e6 / 8 * 0.955 / 2;  // bytes/s
  for (const GroupLinks& g : {links_of(groups_of(l, Axis::kDp), Pattern::kRing, c),
                              links_of(groups_of(l, Axis::kPp), Pattern::kChain, c),
                              links_of(embedding_groups(l), Pattern::kRing, c)}) {
    EXPECT_EQ(g.kind, LinkKind::kInterNode);
    EXPECT_EQ(g.flows_per_node, 2);
    EXPECT_DOUBLE_EQ(g.bandwidth, flow);
  }
}

}  // namespace
}  // namespace hycc::sim
