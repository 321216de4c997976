// Where the groups of each parallel dimension sit on the cluster, and what that means for their
// links: a group whose members share one node talks over the intra-node links; a group that
// spans nodes is limited by the network, whose per-node bandwidth the concurrent flows leaving
// that node share (docs/sim.md, "Placement").
#pragma once

#include <vector>

#include "config.h"

namespace hycc::sim {

enum class LinkKind { kIntraNode, kInterNode };
const char* link_kind_name(LinkKind k);

// The communication groups of a collective, as world ranks, and how they talk.
enum class Pattern {
  kRing,   // member i sends to member i+1 (mod n): ring allreduce, reduce-scatter, allgather
  kChain,  // member i sends to member i+1, no wrap: pipeline stages
};

// What a collective's groups see of the cluster.
struct GroupLinks {
  long group_size = 1;
  LinkKind kind = LinkKind::kIntraNode;  // inter-node if any group sends across nodes
  // Concurrent flows that leave the busiest node when every group sends at once (0 when
  // intra-node): the network bandwidth per flow is the node's bandwidth over this.
  long flows_per_node = 0;
  double bandwidth = 0;  // bytes/s per flow
  double latency = 0;    // seconds per message
};

// The world rank of grid coordinates (tp, dp, pp) in the layout's order.
long world_rank(const LayoutConfig& l, long tp, long dp, long pp);
// Every group of dimension `axis` (tp, dp or pp), each in rank order of that dimension.
std::vector<std::vector<long>> groups_of(const LayoutConfig& l, Axis axis);
// The tied-embedding groups: {first stage, last stage} of every pipeline.
std::vector<std::vector<long>> embedding_groups(const LayoutConfig& l);

// Links of `groups` (all of one size) sending in `pattern` at the same time.
GroupLinks links_of(const std::vector<std::vector<long>>& groups, Pattern pattern,
                    const ClusterConfig& c);

}  // namespace hycc::sim
