// ParallelGrid: the dp x tp x pp layout and its communicators (see hycc/grid.h).
#include <mpi.h>

#include <array>

#include "hycc/error.h"
#include "hycc/grid.h"

namespace hycc {
namespace {

void check_shape(const Communicator& world, const GridShape& s) {
  // Every rank must ask for the same layout, or the splits would not match: agree first (on the
  // values as given), so that every rank throws the same error.
  std::array<int, 6> v = {s.dp, s.tp, s.pp, -s.dp, -s.tp, -s.pp};
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), 6, MPI_INT, MPI_MIN, world.mpi()));
  if (v[0] != -v[3] || v[1] != -v[4] || v[2] != -v[5]) {
    throw CommError(
        tagged("grid", "ranks disagree on the layout: this rank asked for ", to_string(s)));
  }
  if (s.dp < 1 || s.tp < 1 || s.pp < 1) {
    throw InvalidArgument(tagged("grid", "every dimension must be at least 1, got ", to_string(s)));
  }
  const long long need = static_cast<long long>(s.dp) * s.tp * s.pp;
  if (need != world.size()) {
    throw InvalidArgument(tagged("grid", to_string(s), " needs ", need, " ranks, but ",
                                 world.name().empty() ? "the communicator" : world.name(), " has ",
                                 world.size()));
  }
}

}  // namespace

std::string to_string(const GridShape& shape) {
  return detail::concat("dp ", shape.dp, " x tp ", shape.tp, " x pp ", shape.pp);
}

int ParallelGrid::world_rank(const GridShape& shape, int dp_rank, int tp_rank, int pp_rank) {
  if (dp_rank < 0 || dp_rank >= shape.dp || tp_rank < 0 || tp_rank >= shape.tp || pp_rank < 0 ||
      pp_rank >= shape.pp) {
    throw InvalidArgument(tagged("grid", "position (dp ", dp_rank, ", tp ", tp_rank, ", pp ",
                                 pp_rank, ") is outside ", to_string(shape)));
  }
  return (pp_rank * shape.dp + dp_rank) * shape.tp + tp_rank;
}

ParallelGrid::ParallelGrid(const Communicator& world, GridShape shape)
    : world_(world), shape_(shape), tp_(world), dp_(world), pp_(world), zero_(world) {
  check_shape(world, shape);
  const int r = world.rank();
  tp_rank_ = r % shape.tp;
  dp_rank_ = (r / shape.tp) % shape.dp;
  pp_rank_ = r / (shape.tp * shape.dp);
  // Colors: the index of the group among the groups of the same dimension; keys: the rank
  // within it, so that each communicator's rank is the position along its dimension.
  tp_ = world.split(pp_rank_ * shape.dp + dp_rank_, tp_rank_, "tp");
  dp_ = world.split(pp_rank_ * shape.tp + tp_rank_, dp_rank_, "dp");
  pp_ = world.split(dp_rank_ * shape.tp + tp_rank_, pp_rank_, "pp");
  zero_ = dp_.dup("zero");
  const bool member = first_stage() || last_stage();
  MPI_Comm emb = MPI_COMM_NULL;
  HYCC_CHECK_MPI(MPI_Comm_split(
      world.mpi(), member ? dp_rank_ * shape.tp + tp_rank_ : MPI_UNDEFINED, pp_rank_, &emb));
  if (member) embedding_ = Communicator::adopt(emb, "embedding");
}

const Communicator& ParallelGrid::embedding() const {
  if (!embedding_) {
    throw InvalidArgument(tagged("grid", "rank ", world_.rank(), " is in pipeline stage ", pp_rank_,
                                 " of ", shape_.pp,
                                 ", which holds no embedding (only the first and last do)"));
  }
  return *embedding_;
}

}  // namespace hycc
