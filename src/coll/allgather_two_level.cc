// Two-level allgather over N nodes of L ranks (docs/algorithms.md, "two-level"):
// 1. between the nodes, the compressed ring allgather among the N ranks of local rank l: each
//    block compressed once by its owner, forwarded as it is, decoded into its place in recv;
// 2. inside the node, the uncompressed ring allgather of the N blocks each local rank holds
//    (packed, then unpacked into their ranks' places).
// Every block is the decoding of its owner's streams on every rank (bit-identical results), as
// in the flat ring; error e(A), as there. Per rank, the link between nodes carries (N - 1)/N of
// the result's n/L elements, compressed.
#include <cstring>
#include <vector>

#include "coll/algorithms.h"
#include "coll/two_level.h"
#include "common/buffer_pool.h"

namespace hycc::coll {

void allgather_two_level(Context& ctx, const comm::LevelComms& levels,
                         const comm::Topology& topology, ConstTensorView send, TensorView recv) {
  const size_t m = send.count, bytes = m * dtype_size(send.dtype);
  const int nodes = topology.nodes();
  const int local = levels.intra.rank(), local_size = levels.intra.size();
  const std::vector<std::vector<int>> ranks = node_ranks(topology);
  const auto block_of = [&](int rank) { return slice(recv, static_cast<size_t>(rank) * m, m); };

  // 1. The blocks of this rank's local rank on every node.
  Context inter =
      level_context(ctx, levels.inter, ctx.codec, stream_seed(ctx.seed, local, kTwoLevelPhase, 0));
  std::vector<TensorView> across;
  for (int j = 0; j < nodes; ++j) across.push_back(block_of(ranks[size_t(j)][size_t(local)]));
  allgather_blocks_ring(inter, send, across);

  // 2. The other local ranks' blocks, inside the node.
  const size_t group = static_cast<size_t>(nodes) * bytes;
  std::vector<std::byte> packed = pooled_bytes(group * static_cast<size_t>(local_size));
  for (int j = 0; j < nodes; ++j) {
    std::memcpy(packed.data() + static_cast<size_t>(local) * group + static_cast<size_t>(j) * bytes,
                across[static_cast<size_t>(j)].data, bytes);
  }
  std::vector<TensorView> groups;
  for (int g = 0; g < local_size; ++g) {
    groups.push_back({send.dtype, static_cast<size_t>(nodes) * m,
                      packed.data() + static_cast<size_t>(g) * group});
  }
  Context intra = level_context(ctx, levels.intra, uncompressed(), ctx.seed);
  allgather_blocks_ring(intra, groups[static_cast<size_t>(local)], groups);
  for (int g = 0; g < local_size; ++g) {
    if (g == local) continue;
    for (int j = 0; j < nodes; ++j) {
      std::memcpy(block_of(ranks[size_t(j)][size_t(g)]).data,
                  packed.data() + static_cast<size_t>(g) * group + static_cast<size_t>(j) * bytes,
                  bytes);
    }
  }

  recycle(packed);
  add_level_counters(ctx, inter, true);
  add_level_counters(ctx, intra, false);
  inter.errors.rethrow();
  intra.errors.rethrow();
}

}  // namespace hycc::coll
