// Pieces shared by the two-level algorithms (allreduce_two_level.cc, reduce_scatter_two_level.cc,
// allgather_two_level.cc): the call's context on one level's communicator, the uncompressed
// codec of the steps inside a node, and the seeds of the compressed steps between nodes.
#pragma once

#include <vector>

#include "coll/coll_internal.h"
#include "comm/topology.h"

namespace hycc::coll {

// The phase of the inter-node streams' seeds (stream_seed), apart from the flat algorithms'.
inline constexpr uint64_t kTwoLevelPhase = 0x7477'6f6c'6576'656cull;

// ctx's call on `level` (an MPI communicator of comm/topology.h's LevelComms) with `codec`.
inline Context level_context(const Context& ctx, const Communicator& level,
                             const CodecConfig& codec, uint64_t seed) {
  return Context{.comm = level.mpi(),
                 .group = nullptr,
                 .rank = level.rank(),
                 .size = level.size(),
                 .tag = ctx.tag,
                 .codec = codec,
                 .seg_elems = ctx.seg_elems,
                 .seed = seed,
                 .errors = {},
                 .counters = {}};
}

// The codec of the steps inside a node: none (docs/algorithms.md, "two-level").
const CodecConfig& uncompressed();

// Adds what a level's steps did to the call's counters: codec time always, streams and bytes
// as the compressed steps between nodes (`inter`) or as intra_bytes.
void add_level_counters(Context& ctx, const Context& level, bool inter);

// The ranks of each node, ascending: [node][local rank] is the communicator's rank there. Built
// once per call (one pass over the ranks), not looked up per chunk.
std::vector<std::vector<int>> node_ranks(const comm::Topology& topology);

}  // namespace hycc::coll
