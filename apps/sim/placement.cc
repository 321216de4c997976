#include "placement.h"

#include <algorithm>
#include <map>

namespace hycc::sim {

const char* link_kind_name(LinkKind k) {
  return k == LinkKind::kIntraNode ? "intra-node" : "inter-node";
}

long world_rank(const LayoutConfig& l, long tp, long dp, long pp) {
  const auto coordinate = [&](Axis a) { return a == Axis::kTp ? tp : a == Axis::kDp ? dp : pp; };
  const auto extent = [&](Axis a) { return a == Axis::kTp ? l.tp : a == Axis::kDp ? l.dp : l.pp; };
  long rank = 0, stride = 1;
  for (Axis a : l.order) {
    rank += coordinate(a) * stride;
    stride *= extent(a);
  }
  return rank;
}

std::vector<std::vector<long>> groups_of(const LayoutConfig& l, Axis axis) {
  std::vector<std::vector<long>> groups;
  const long n = axis == Axis::kTp ? l.tp : axis == Axis::kDp ? l.dp : l.pp;
  // Enumerate the other two coordinates; the group runs along `axis`.
  for (long a = 0; a < (axis == Axis::kTp ? 1 : l.tp); ++a) {
    for (long b = 0; b < (axis == Axis::kDp ? 1 : l.dp); ++b) {
      for (long c = 0; c < (axis == Axis::kPp ? 1 : l.pp); ++c) {
        std::vector<long> g;
        for (long i = 0; i < n; ++i) {
          g.push_back(world_rank(l, axis == Axis::kTp ? i : a, axis == Axis::kDp ? i : b,
                                 axis == Axis::kPp ? i : c));
        }
        groups.push_back(std::move(g));
      }
    }
  }
  return groups;
}

std::vector<std::vector<long>> embedding_groups(const LayoutConfig& l) {
  std::vector<std::vector<long>> groups;
  for (const auto& pipeline : groups_of(l, Axis::kPp)) {
    groups.push_back({pipeline.front(), pipeline.back()});
  }
  return groups;
}

GroupLinks links_of(const std::vector<std::vector<long>>& groups, Pattern pattern,
                    const ClusterConfig& c) {
  GroupLinks out;
  out.group_size = groups.empty() ? 1 : static_cast<long>(groups.front().size());
  std::map<long, long> leaving;  // node -> flows that leave it
  for (const auto& g : groups) {
    const size_t n = g.size();
    const size_t edges = pattern == Pattern::kRing ? (n > 1 ? n : 0) : n - 1;
    for (size_t i = 0; i < edges; ++i) {
      const long from = g[i] / c.gpus_per_node, to = g[(i + 1) % n] / c.gpus_per_node;
      if (from != to) ++leaving[from];
    }
  }
  for (const auto& [node, flows] : leaving)
    out.flows_per_node = std::max(out.flows_per_node, flows);
  if (out.flows_per_node > 0) {
    out.kind = LinkKind::kInterNode;
    out.bandwidth = c.inter_node.goodput() / double(out.flows_per_node);
    out.latency = c.inter_node.latency;
  } else {
    out.bandwidth = c.intra_node.goodput();
    out.latency = c.intra_node.latency;
  }
  return out;
}

}  // namespace hycc::sim
