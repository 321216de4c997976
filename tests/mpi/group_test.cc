// Communicators over a group that is not MPI's (comm/group.h): hycc's collectives reach the ranks
// only through the group's interface. The test group forwards to MPI on a communicator of its own
// and counts what it is asked for, so that the same calls on the MPI communicator give the
// reference: every result is bit-identical, and the group really carried the call.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "coll_test_util.h"
#include "comm/call_check.h"
#include "comm/group.h"
#include "comm/tags.h"
#include "mpi_backed_group.h"

namespace hycc {
namespace {

using test::Buffer;
using test::GroupBesideMpi;
using test::MpiBackedGroup;
using test::world;

CollectiveOptions compressed(const std::string& codec, Algorithm algorithm) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse(codec);
  o.algorithm = algorithm;
  o.threshold_bytes = 0;
  o.check_arguments = ArgumentCheck::kAlways;
  return o;
}

TEST(Group, CommunicatorKnowsItIsNotMpi) {
  GroupBesideMpi g;
  EXPECT_FALSE(g.over.is_mpi());
  EXPECT_EQ(g.over.group(), g.group.get());
  EXPECT_EQ(g.over.rank(), world().rank());
  EXPECT_EQ(g.over.size(), world().size());
  EXPECT_TRUE(g.mpi.is_mpi());
  EXPECT_EQ(g.mpi.group(), nullptr);
  try {
    (void)g.over.mpi();
    ADD_FAILURE() << "mpi() of a group's communicator returned";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("test group"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)g.over.dup("x"), InvalidArgument);
  EXPECT_THROW(Communicator::over(nullptr), InvalidArgument);
}

TEST(Group, AttributesLiveWithTheGroup) {
  GroupBesideMpi g;
  comm::Group& group = *g.group;
  group.attribute<int>() = 7;
  EXPECT_EQ(group.attribute<int>(), 7);
  EXPECT_EQ(group.attribute<double>(), 0.0);
}

TEST(Group, TagsFollowTheGroupsBound) {
  GroupBesideMpi g;
  EXPECT_EQ(comm::max_user_tag(g.over), (32767 - (32767 / 2 + 1) - 7) / 8);
  EXPECT_THROW(comm::internal_tag(g.over, 5000, Operation::kAllreduce), InvalidArgument);
}

// Every algorithm and codec of allreduce over the group gives the MPI communicator's bits.
TEST(Group, AllreduceMatchesMpiBitForBit) {
  GroupBesideMpi g;
  const int r = world().rank();
  for (const Algorithm a : {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kAuto}) {
    for (const std::string codec : {"none", "quant:bits=8", "quant:bits=4", "bf16"}) {
      for (const size_t count : {size_t{1}, size_t{1001}, size_t{300007}}) {
        const std::string what =
            std::string(comm::algorithm_name(a)) + " " + codec + " " + std::to_string(count);
        const Buffer in = test::make_input(DType::kF32, count, r, false);
        Buffer via_group = in, via_mpi = in;
        const int transports = g.group->transports, natives = g.group->natives;
        allreduce(g.over, in.view(), via_group.view(), ReduceOp::kSum, compressed(codec, a));
        allreduce(g.mpi, in.view(), via_mpi.view(), ReduceOp::kSum, compressed(codec, a));
        test::expect_bits_equal(via_group, via_mpi, what);
        // kAuto with codec none is the native call: the group's own allreduce.
        const bool native = a == Algorithm::kAuto && codec == "none";
        if (world().size() > 1) {
          EXPECT_EQ(g.group->transports > transports, !native) << what;
          EXPECT_EQ(g.group->natives > natives, native) << what;
        }
      }
    }
  }
  if (world().size() > 1) {
    EXPECT_GT(g.group->combines, 0);  // the argument agreement ran on the group
  }
}

TEST(Group, OtherCollectivesMatchMpi) {
  GroupBesideMpi g;
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = compressed("quant:bits=8", Algorithm::kAuto);
  const size_t n = 40000;
  {
    const Buffer in = test::make_input(DType::kF32, n * p, r, false);
    Buffer a(DType::kF32, n), b(DType::kF32, n);
    reduce_scatter(g.over, in.view(), a.view(), ReduceOp::kSum, o);
    reduce_scatter(g.mpi, in.view(), b.view(), ReduceOp::kSum, o);
    test::expect_bits_equal(a, b, "reduce_scatter");
  }
  {
    const Buffer in = test::make_input(DType::kF32, n, r, false);
    Buffer a(DType::kF32, n * p), b(DType::kF32, n * p);
    allgather(g.over, in.view(), a.view(), o);
    allgather(g.mpi, in.view(), b.view(), o);
    test::expect_bits_equal(a, b, "allgather");
  }
  {
    Buffer a = test::make_input(DType::kF32, n, r == 0 ? 0 : 1, false), b = a;
    broadcast(g.over, a.view(), 0, o);
    broadcast(g.mpi, b.view(), 0, o);
    test::expect_bits_equal(a, b, "broadcast");
  }
  {
    const Buffer in = test::make_input(DType::kF32, n * p, r, false);
    Buffer a(DType::kF32, n * p), b(DType::kF32, n * p);
    alltoall(g.over, in.view(), a.view(), o);
    alltoall(g.mpi, in.view(), b.view(), o);
    test::expect_bits_equal(a, b, "alltoall");
  }
}

TEST(Group, NativePathIsTheGroups) {
  GroupBesideMpi g;
  const Buffer in = test::make_input(DType::kF32, 100, world().rank(), true);
  Buffer a = in, b = in;
  CollectiveOptions o;  // codec none: native
  allreduce(g.over, in.view(), a.view(), ReduceOp::kSum, o);
  allreduce(g.mpi, in.view(), b.view(), ReduceOp::kSum, o);
  test::expect_bits_equal(a, b, "native allreduce");
  EXPECT_EQ(g.group->natives, world().size() > 1 ? 1 : 0);  // one rank: a copy
}

TEST(Group, MismatchedArgumentsFailOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  GroupBesideMpi g;
  const size_t count = world().rank() == 0 ? 1000 : 1001;
  Buffer b = test::make_input(DType::kF32, count, world().rank(), false);
  EXPECT_THROW(allreduce(g.over, b.view(), b.view(), ReduceOp::kSum,
                         compressed("quant:bits=8", Algorithm::kRing)),
               CommError);
}

TEST(Group, MpiOnlyAlgorithmsSaySo) {
  GroupBesideMpi g;
  Buffer b = test::make_input(DType::kF32, 1000, world().rank(), false);
  if (world().size() < 2) GTEST_SKIP() << "one rank returns before any algorithm";
  EXPECT_THROW(allreduce(g.over, b.view(), b.view(), ReduceOp::kSum,
                         compressed("quant:bits=8", Algorithm::kCompressOnce)),
               InvalidArgument);
}

}  // namespace
}  // namespace hycc
