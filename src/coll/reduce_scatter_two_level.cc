// Two-level reduce-scatter over N nodes of L ranks (docs/algorithms.md, "two-level"): rank r ends
// with chunk_range(n, p, r) of the sum, as the flat ring's.
// 1. Inside the node, the uncompressed ring reduce-scatter of a packed float32 copy of send
//    whose group l holds, node by node, the chunks of the ranks at local rank l: local rank l
//    ends with the node's sum of the N chunks its inter-node ring owns.
// 2. Between the nodes, the compressed ring reduce-scatter of that group over the N ranks of
//    local rank l, chunk j being rank (node j, local l)'s: the node sums travel as float32 and
//    the result is rounded once into the dtype (averaged over p).
// Each element is compressed at N - 1 hops instead of p - 1, its partial sums holding L, 2L, ..
// (N - 1) L inputs: error e(L) + e(2L) + ... + e((N - 1) L) (the flat ring's: e(1) + ... +
// e(p - 1)). Per rank, the link between nodes carries (N - 1)/N of n/L elements, compressed.
#include <vector>

#include "codec/float_io.h"
#include "coll/algorithms.h"
#include "coll/two_level.h"
#include "common/buffer_pool.h"

namespace hycc::coll {

void reduce_scatter_two_level(Context& ctx, const comm::LevelComms& levels,
                              const comm::Topology& topology, ConstTensorView send, TensorView recv,
                              ReduceOp op) {
  const size_t n = send.count;
  const int p = ctx.size, nodes = topology.nodes();
  const int local = levels.intra.rank(), local_size = levels.intra.size();

  // The packed layout: group g (local rank g) = the chunks of ranks (0, g), (1, g), ...
  std::vector<ChunkRange> groups(static_cast<size_t>(local_size));  // in `packed`
  std::vector<ChunkRange> mine(static_cast<size_t>(nodes));         // in this rank's group
  const std::vector<std::vector<int>> ranks = node_ranks(topology);
  PooledFloats packed(n);
  size_t at = 0;
  for (int g = 0; g < local_size; ++g) {
    groups[static_cast<size_t>(g)].offset = at;
    for (int j = 0; j < nodes; ++j) {
      const ChunkRange c = chunk_range(n, p, ranks[size_t(j)][size_t(g)]);
      codec::load_as_float(send, c.offset, c.count, packed.data() + at);
      if (g == local)
        mine[static_cast<size_t>(j)] = {at - groups[static_cast<size_t>(g)].offset, c.count};
      at += c.count;
    }
    groups[static_cast<size_t>(g)].count = at - groups[static_cast<size_t>(g)].offset;
  }

  // 1. The node's sum of this rank's group, in float32.
  Context intra = level_context(ctx, levels.intra, uncompressed(), ctx.seed);
  const ChunkRange own = groups[static_cast<size_t>(local)];
  PooledFloats node_sum(own.count);
  reduce_scatter_ring(intra, ConstTensorView{DType::kF32, n, packed.data()},
                      TensorView{DType::kF32, own.count, node_sum.data()}, ReduceOp::kSum, groups);
  // 2. This rank's chunk summed over the nodes, compressed between them.
  Context inter =
      level_context(ctx, levels.inter, ctx.codec, stream_seed(ctx.seed, local, kTwoLevelPhase, 0));
  reduce_scatter_ring(inter, ConstTensorView{DType::kF32, own.count, node_sum.data()}, recv, op,
                      mine, p);

  add_level_counters(ctx, intra, false);
  add_level_counters(ctx, inter, true);
  intra.errors.rethrow();
  inter.errors.rethrow();
}

}  // namespace hycc::coll
