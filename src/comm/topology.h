// The nodes of a communicator: which of its ranks share a machine (and its fast links), so that
// the two-level algorithms (docs/algorithms.md, "Topology and the two-level algorithms") move
// data inside a node natively and compress only what crosses between nodes.
//
// A communicator learns its topology once, at the first call that needs it (collective over the
// communicator: every rank must reach it in the same call), from, in this order:
// 1. set_topology() on this communicator (tests, callers that know better: the torch backend);
// 2. HYCC_TOPOLOGY, read per call of topology() that has to detect:
//    - `shared` (the default): MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), the ranks MPI can
//      reach through shared memory;
//    - `flat`: every rank is a node of its own (the flat algorithms everywhere);
//    - `ranks-per-node=K`: world ranks 0..K-1 are node 0, K..2K-1 node 1, ...;
//    - `nodes=A,B,...`: the node of each world rank (MPI_COMM_WORLD's size entries, any
//      non-negative integers; equal numbers, one node);
// 3. for a communicator that is not MPI's (a torch process group), every rank a node of its own
//    unless its owner sets one.
// Node numbers are normalized: node 0 holds rank 0, node 1 the lowest rank not in node 0, ...
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hycc/comm.h"

namespace hycc::comm {

struct Topology {
  std::vector<int> node_of;  // node of each rank of the communicator (normalized)
  std::string source;        // where it came from, for messages and logs

  int nodes() const;
  int size() const { return static_cast<int>(node_of.size()); }
  // The ranks of `node`, ascending.
  std::vector<int> ranks_of(int node) const;
  // Position of `rank` among its node's ranks.
  int local_rank(int rank) const;
  // Every node has the same number of ranks.
  bool uniform() const;
  // Whether the two-level algorithms can run: uniform, at least 2 nodes of at least 2 ranks.
  bool two_level() const;
  // How many hops of the flat ring (rank r to r + 1 mod size) join two different nodes: the
  // number of nodes (or 0 for one node) when each node's ranks are contiguous, up to size when
  // no two neighbours share a node.
  int ring_crossings() const;
  // "4 nodes x 2 ranks (MPI_COMM_TYPE_SHARED)", "3 nodes of 2, 2, 1 ranks (HYCC_TOPOLOGY)".
  std::string describe() const;
};

// Normalizes node ids (any non-negative integers, one per rank) into a Topology.
Topology make_topology(const std::vector<int>& node_ids, std::string source);

// HYCC_TOPOLOGY's text as the node of each of `world_size` world ranks; empty for `shared`.
// InvalidArgument naming the variable and what is wrong.
std::vector<int> parse_topology(std::string_view text, int world_size);

// This communicator's topology (see above). Collective on first use.
const Topology& topology(const Communicator& comm);
// Sets it (same on every rank; not collective). InvalidArgument if the sizes differ.
void set_topology(const Communicator& comm, const std::vector<int>& node_ids,
                  std::string source = "set by the caller");

// The communicators of a two-level algorithm, for a topology with two_level(): `intra` holds this
// rank's node (ordered by rank), `inter` the ranks of every node at this rank's local rank
// (ordered by node). Collective over comm on first use.
struct LevelComms {
  Communicator intra;
  Communicator inter;
};
const LevelComms& level_comms(const Communicator& comm);

}  // namespace hycc::comm
