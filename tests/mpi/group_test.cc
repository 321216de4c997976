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

namespace hycc {
namespace {

using test::Buffer;
using test::world;

class MpiBackedGroup final : public comm::Group {
 public:
  MpiBackedGroup() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }
  ~MpiBackedGroup() override { MPI_Comm_free(&comm_); }

  int rank() const override { return world().rank(); }
  int size() const override { return world().size(); }
  std::string describe() const override { return "test group"; }
  int64_t tag_upper_bound() const override { return 32767; }
  std::unique_ptr<comm::Transport> host_transport(comm::DeviceOps& host, int tag) override {
    ++transports;
    return comm::make_mpi_transport(host, comm_, tag);
  }
  void combine(std::span<int64_t> v, comm::Combine how) override {
    ++combines;
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, op(how), comm_);
  }
  void combine(std::span<double> v, comm::Combine how) override {
    ++combines;
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, op(how), comm_);
  }
  void barrier() override { MPI_Barrier(comm_); }
  // The native path: float32 sums only (what the tests below send it).
  void allreduce(ConstTensorView send, TensorView recv, ReduceOp op) override {
    ++natives;
    ASSERT_EQ(send.dtype, DType::kF32);
    ASSERT_EQ(op, ReduceOp::kSum);
    const void* from = send.data == recv.data ? MPI_IN_PLACE : send.data;
    MPI_Allreduce(from, recv.data, static_cast<int>(send.count), MPI_FLOAT, MPI_SUM, comm_);
  }
  void reduce_scatter(ConstTensorView, TensorView, ReduceOp) override { unexpected(); }
  void allgather(ConstTensorView, TensorView) override { unexpected(); }
  void broadcast(TensorView, int) override { unexpected(); }
  void alltoall(ConstTensorView, TensorView) override { unexpected(); }

  std::atomic<int> transports{0}, combines{0}, natives{0};

 private:
  static MPI_Op op(comm::Combine how) {
    return how == comm::Combine::kMin ? MPI_MIN : how == comm::Combine::kMax ? MPI_MAX : MPI_SUM;
  }
  static void unexpected() { ADD_FAILURE() << "a native call the test does not make"; }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

struct Groups {
  std::shared_ptr<MpiBackedGroup> group = std::make_shared<MpiBackedGroup>();
  Communicator over = Communicator::over(group, "dp");
  Communicator mpi = world().dup("dp");
};

CollectiveOptions compressed(const std::string& codec, Algorithm algorithm) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse(codec);
  o.algorithm = algorithm;
  o.threshold_bytes = 0;
  o.check_arguments = ArgumentCheck::kAlways;
  return o;
}

TEST(Group, CommunicatorKnowsItIsNotMpi) {
  Groups g;
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
  Groups g;
  comm::Group& group = *g.group;
  group.attribute<int>() = 7;
  EXPECT_EQ(group.attribute<int>(), 7);
  EXPECT_EQ(group.attribute<double>(), 0.0);
}

TEST(Group, TagsFollowTheGroupsBound) {
  Groups g;
  EXPECT_EQ(comm::max_user_tag(g.over), (32767 - (32767 / 2 + 1) - 7) / 8);
  EXPECT_THROW(comm::internal_tag(g.over, 5000, Operation::kAllreduce), InvalidArgument);
}

// Every algorithm and codec of allreduce over the group gives the MPI communicator's bits.
TEST(Group, AllreduceMatchesMpiBitForBit) {
  Groups g;
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
  Groups g;
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
  Groups g;
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
  Groups g;
  const size_t count = world().rank() == 0 ? 1000 : 1001;
  Buffer b = test::make_input(DType::kF32, count, world().rank(), false);
  EXPECT_THROW(allreduce(g.over, b.view(), b.view(), ReduceOp::kSum,
                         compressed("quant:bits=8", Algorithm::kRing)),
               CommError);
}

TEST(Group, MpiOnlyAlgorithmsSaySo) {
  Groups g;
  Buffer b = test::make_input(DType::kF32, 1000, world().rank(), false);
  if (world().size() < 2) GTEST_SKIP() << "one rank returns before any algorithm";
  EXPECT_THROW(allreduce(g.over, b.view(), b.view(), ReduceOp::kSum,
                         compressed("quant:bits=8", Algorithm::kCompressOnce)),
               InvalidArgument);
}

}  // namespace
}  // namespace hycc
