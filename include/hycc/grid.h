// The parallel layout of a training run: dp x tp x pp ranks over a world communicator, with the
// named communicators of each parallel dimension. The policy chooses codecs by these names.
//
// Rank order is Megatron-LM's: tensor-parallel ranks are adjacent (they exchange the most data,
// so they share a node), then data parallel, then pipeline stages:
//
//   world rank = (pp_rank * dp + dp_rank) * tp + tp_rank
//
// e.g. dp 2, tp 2, pp 2 on 8 ranks: tp groups {0,1} {2,3} {4,5} {6,7}; dp groups {0,2} {1,3}
// {4,6} {5,7}; pp groups {0,4} {1,5} {2,6} {3,7}.
#pragma once

#include <optional>
#include <string>

#include "hycc/comm.h"

namespace hycc {

struct GridShape {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int size() const { return dp * tp * pp; }
};

// "dp 2 x tp 2 x pp 2".
std::string to_string(const GridShape& shape);

class ParallelGrid {
 public:
  // Collective over `world`. Throws InvalidArgument (on every rank) when a dimension is < 1 or
  // dp * tp * pp differs from world.size().
  ParallelGrid(const Communicator& world, GridShape shape);

  const GridShape& shape() const { return shape_; }
  int dp_rank() const { return dp_rank_; }
  int tp_rank() const { return tp_rank_; }
  int pp_rank() const { return pp_rank_; }
  bool first_stage() const { return pp_rank_ == 0; }
  bool last_stage() const { return pp_rank_ == shape_.pp - 1; }

  const Communicator& world() const { return world_; }
  // The ranks of this rank's (dp, pp) position across tensor parallelism, named "tp".
  const Communicator& tp() const { return tp_; }
  // The replicas of this rank's (tp, pp) position, named "dp": gradients are averaged here.
  const Communicator& dp() const { return dp_; }
  // The stages of this rank's (dp, tp) position, named "pp", ordered by stage.
  const Communicator& pp() const { return pp_; }
  // The ZeRO shard group, named "zero": the same ranks as dp (ZeRO shards optimizer states,
  // gradients and parameters across the data-parallel replicas), on its own communicator so that
  // its traffic (gradient reduce-scatter, parameter allgather) is told apart from plain dp.
  const Communicator& zero() const { return zero_; }
  // The first and last stage of this rank's pipeline (tied input and output embeddings), named
  // "embedding". Only ranks of the first or last stage belong to it (with pp 1, the rank alone).
  bool in_embedding_group() const { return embedding_.has_value(); }
  // Throws InvalidArgument on a rank of a middle stage.
  const Communicator& embedding() const;

  // The world rank of a position (no communication; throws InvalidArgument if out of range).
  static int world_rank(const GridShape& shape, int dp_rank, int tp_rank, int pp_rank);

 private:
  Communicator world_;
  GridShape shape_;
  int dp_rank_ = 0, tp_rank_ = 0, pp_rank_ = 0;
  Communicator tp_, dp_, pp_, zero_;
  std::optional<Communicator> embedding_;
};

}  // namespace hycc
