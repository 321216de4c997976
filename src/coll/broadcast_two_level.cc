// Two-level broadcast over N nodes of L ranks (docs/algorithms.md, "two-level"): the root's
// buffer goes down the compressed chain among the ranks at the root's local rank (one per node,
// the root's node first), then each of them broadcasts it inside its node uncompressed (hycc's
// chain with codec none). Every rank holds the decoding of the root's streams, the root
// included (bit-identical results); error e(A), as the flat chain's. Each node's link carries
// the compressed message in once and out once, wherever the node's ranks sit in rank order.
#include "coll/algorithms.h"
#include "coll/two_level.h"

namespace hycc::coll {

void broadcast_two_level(Context& ctx, const comm::LevelComms& levels,
                         const comm::Topology& topology, TensorView buffer, int root) {
  const int root_node = topology.node_of.at(static_cast<size_t>(root));
  const int root_local = topology.local_rank(root);
  Context inter = level_context(ctx, levels.inter, ctx.codec,
                                stream_seed(ctx.seed, root_local, kTwoLevelPhase, 0));
  // The inter communicators are ordered by node: the root's node is inter rank root_node.
  if (levels.intra.rank() == root_local) broadcast_chain(inter, buffer, root_node);
  Context intra = level_context(ctx, levels.intra, uncompressed(), ctx.seed);
  broadcast_chain(intra, buffer, root_local);
  add_level_counters(ctx, inter, true);
  add_level_counters(ctx, intra, false);
  inter.errors.rethrow();
  intra.errors.rethrow();
}

}  // namespace hycc::coll
