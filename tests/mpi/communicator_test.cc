// Communicator: wrapping, duplication, splitting, names.
#include <gtest/gtest.h>

#include "hycc/comm.h"

namespace hycc {
namespace {

TEST(Communicator, WorldMatchesMpi) {
  const Communicator world = Communicator::world();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(world.rank(), rank);
  EXPECT_EQ(world.size(), size);
  EXPECT_EQ(world.name(), "world");
}

TEST(Communicator, DupHasItsOwnContext) {
  const Communicator world = Communicator::world();
  const Communicator d = world.dup("dp");
  EXPECT_EQ(d.name(), "dp");
  EXPECT_EQ(d.size(), world.size());
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(d.mpi(), world.mpi(), &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);
}

TEST(Communicator, SplitGroupsByColor) {
  const Communicator world = Communicator::world();
  const Communicator half = world.split(world.rank() % 2, world.rank(), "tp");
  EXPECT_EQ(half.name(), "tp");
  EXPECT_EQ(half.size(), (world.size() + 1 - world.rank() % 2) / 2);
  EXPECT_EQ(half.rank(), world.rank() / 2);
}

TEST(Communicator, RejectsNull) {
  EXPECT_THROW(Communicator::wrap(MPI_COMM_NULL), InvalidArgument);
}

}  // namespace
}  // namespace hycc
