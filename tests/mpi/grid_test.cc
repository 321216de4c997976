// ParallelGrid: rank layout (Megatron order) and the named communicators, for every layout of the
// world size; shape errors.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hycc/error.h"
#include "hycc/grid.h"
#include "hycc/policy.h"

namespace hycc::test {
namespace {

const Communicator& world_comm() {
  static const Communicator w = Communicator::world();
  return w;
}

// The world ranks of the members of `c`, in c's rank order.
std::vector<int> members(const Communicator& c) {
  std::vector<int> out(static_cast<size_t>(c.size()));
  const int me = world_comm().rank();
  MPI_Allgather(&me, 1, MPI_INT, out.data(), 1, MPI_INT, c.mpi());
  return out;
}

std::string mpi_name(const Communicator& c) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  MPI_Comm_get_name(c.mpi(), name, &len);
  return std::string(name, static_cast<size_t>(len));
}

std::vector<GridShape> layouts(int p) {
  std::vector<GridShape> out;
  for (int dp = 1; dp <= p; ++dp) {
    for (int tp = 1; tp <= p; ++tp) {
      if (p % (dp * tp) == 0) out.push_back({dp, tp, p / (dp * tp)});
    }
  }
  return out;
}

TEST(Grid, WorldRankFollowsMegatronOrder) {
  // The example of hycc/grid.h: dp 2, tp 2, pp 2.
  const GridShape s{2, 2, 2};
  EXPECT_EQ(ParallelGrid::world_rank(s, 0, 0, 0), 0);
  EXPECT_EQ(ParallelGrid::world_rank(s, 0, 1, 0), 1);
  EXPECT_EQ(ParallelGrid::world_rank(s, 1, 0, 0), 2);
  EXPECT_EQ(ParallelGrid::world_rank(s, 1, 1, 0), 3);
  EXPECT_EQ(ParallelGrid::world_rank(s, 0, 0, 1), 4);
  EXPECT_EQ(ParallelGrid::world_rank(s, 1, 1, 1), 7);
  EXPECT_THROW(ParallelGrid::world_rank(s, 2, 0, 0), InvalidArgument);
  EXPECT_THROW(ParallelGrid::world_rank(s, 0, -1, 0), InvalidArgument);
}

TEST(Grid, EveryLayoutHasTheRightGroups) {
  const int p = world_comm().size(), me = world_comm().rank();
  for (const GridShape& s : layouts(p)) {
    const std::string what = to_string(s);
    const ParallelGrid g(world_comm(), s);
    EXPECT_EQ(ParallelGrid::world_rank(s, g.dp_rank(), g.tp_rank(), g.pp_rank()), me) << what;
    std::vector<int> tp, dp, pp;
    for (int i = 0; i < s.tp; ++i)
      tp.push_back(ParallelGrid::world_rank(s, g.dp_rank(), i, g.pp_rank()));
    for (int i = 0; i < s.dp; ++i)
      dp.push_back(ParallelGrid::world_rank(s, i, g.tp_rank(), g.pp_rank()));
    for (int i = 0; i < s.pp; ++i)
      pp.push_back(ParallelGrid::world_rank(s, g.dp_rank(), g.tp_rank(), i));
    EXPECT_EQ(members(g.tp()), tp) << what;
    EXPECT_EQ(members(g.dp()), dp) << what;
    EXPECT_EQ(members(g.pp()), pp) << what;
    EXPECT_EQ(members(g.zero()), dp) << what;
    EXPECT_NE(g.zero().mpi(), g.dp().mpi()) << what;
    EXPECT_EQ(g.tp().rank(), g.tp_rank()) << what;
    EXPECT_EQ(g.dp().rank(), g.dp_rank()) << what;
    EXPECT_EQ(g.pp().rank(), g.pp_rank()) << what;
    EXPECT_EQ(g.tp().name(), "tp");
    EXPECT_EQ(mpi_name(g.tp()), "tp");
    EXPECT_EQ(mpi_name(g.dp()), "dp");
    EXPECT_EQ(mpi_name(g.pp()), "pp");
    EXPECT_EQ(mpi_name(g.zero()), "zero");
    const bool edge = g.pp_rank() == 0 || g.pp_rank() == s.pp - 1;
    EXPECT_EQ(g.in_embedding_group(), edge) << what;
    if (edge) {
      std::vector<int> want = {pp.front()};
      if (s.pp > 1) want.push_back(pp.back());
      EXPECT_EQ(members(g.embedding()), want) << what;
      EXPECT_EQ(mpi_name(g.embedding()), "embedding");
    } else {
      EXPECT_THROW(g.embedding(), InvalidArgument) << what;
    }
  }
}

// The policy reads a call's dimension from the communicator's name.
TEST(Grid, CommunicatorsGiveTheirPolicyDimension) {
  const ParallelGrid g(world_comm(), GridShape{world_comm().size(), 1, 1});
  EXPECT_EQ(dimension_of(g.dp(), Operation::kAllreduce), Dimension::kDp);
  EXPECT_EQ(dimension_of(g.tp(), Operation::kAllreduce), Dimension::kTp);
  EXPECT_EQ(dimension_of(g.pp(), Operation::kSendRecv), Dimension::kPp);
  EXPECT_EQ(dimension_of(g.zero(), Operation::kReduceScatter), Dimension::kZeroGrad);
  EXPECT_EQ(dimension_of(g.zero(), Operation::kAllgather), Dimension::kZeroParam);
  EXPECT_EQ(dimension_of(g.embedding(), Operation::kAllreduce), Dimension::kEmbedding);
  EXPECT_EQ(dimension_of(world_comm(), Operation::kAllreduce), Dimension::kOther);
}

TEST(Grid, WrongShapeIsInvalidArgumentOnEveryRank) {
  const int p = world_comm().size();
  EXPECT_THROW(ParallelGrid(world_comm(), GridShape{p + 1, 1, 1}), InvalidArgument);
  EXPECT_THROW(ParallelGrid(world_comm(), GridShape{0, p, 1}), InvalidArgument);
  try {
    ParallelGrid(world_comm(), GridShape{1, 2 * p, 1});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("needs " + std::to_string(2 * p) + " ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(Grid, DisagreeingShapesAreCommErrorOnEveryRank) {
  const int p = world_comm().size();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  const GridShape s = world_comm().rank() == 0 ? GridShape{p, 1, 1} : GridShape{1, p, 1};
  EXPECT_THROW(ParallelGrid(world_comm(), s), CommError);
}

}  // namespace
}  // namespace hycc::test
