// Argument checks: arguments that differ across ranks give CommError on every rank (no hang, no
// crash, nothing sent); invalid local arguments give InvalidArgument on the ranks that passed
// them and CommError on the others; and the communicator stays usable afterwards.
#include "coll_test_util.h"

namespace hycc::test {
namespace {

CollectiveOptions compressed(const char* spec = "quant:bits=8") {
  CollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.threshold_bytes = 0;
  o.segment_bytes = 8;
  return o;
}

// A correct allreduce, to show that nothing is left in flight after a failed call.
void expect_still_works() {
  const Buffer in = make_input(DType::kF32, 9, world().rank(), true);
  Buffer out(DType::kF32, 9);
  allreduce(world(), in.view(), out.view(), ReduceOp::kSum, compressed("none"));
  expect_bits_equal(out, reference_reduce(gather_all(in), DType::kF32, ReduceOp::kSum),
                    "allreduce after a failed call");
}

enum class Op { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall };

std::string op_label(Op op) {
  switch (op) {
    case Op::kAllreduce:
      return "allreduce";
    case Op::kReduceScatter:
      return "reduce_scatter";
    case Op::kAllgather:
      return "allgather";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kAlltoall:
      return "alltoall";
  }
  return "?";
}

// Calls `op` with `n` elements (per rank for allgather, per block for alltoall) and correctly
// sized buffers, or with a receive buffer one element too long (a bad root for broadcast).
void run_op(Op op, size_t n, DType dtype, const CollectiveOptions& o, bool bad_local = false,
            ReduceOp rop = ReduceOp::kSum, int root = 0) {
  const int p = world().size(), r = world().rank();
  const size_t extra = bad_local ? 1 : 0;
  const size_t pn = n * static_cast<size_t>(p);
  switch (op) {
    case Op::kAllreduce: {
      const Buffer in = make_input(dtype, n, r, true);
      Buffer out(dtype, n + extra);
      allreduce(world(), in.view(), out.view(), rop, o);
      return;
    }
    case Op::kReduceScatter: {
      const Buffer in = make_input(dtype, n, r, true);
      Buffer out(dtype, chunk_range(n, p, r).count + extra);
      reduce_scatter(world(), in.view(), out.view(), rop, o);
      return;
    }
    case Op::kAllgather: {
      const Buffer in = make_input(dtype, n, r, true);
      Buffer out(dtype, pn + extra);
      allgather(world(), in.view(), out.view(), o);
      return;
    }
    case Op::kBroadcast: {
      Buffer buffer = make_input(dtype, n, r, true);
      broadcast(world(), buffer.view(), bad_local ? p : root, o);
      return;
    }
    case Op::kAlltoall: {
      const Buffer in = make_input(dtype, pn, r, true);
      Buffer out(dtype, pn + extra);
      alltoall(world(), in.view(), out.view(), o);
      return;
    }
  }
}

class ArgsTest : public ::testing::TestWithParam<Op> {};

TEST_P(ArgsTest, MismatchedCountIsCommErrorEverywhere) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  expect_outcome(Outcome::kComm, op_label(GetParam()), "count", [&] {
    run_op(GetParam(), world().rank() == 0 ? 8 : 7, DType::kF32, compressed());
  });
  expect_still_works();
}

TEST_P(ArgsTest, MismatchedDtypeIsCommErrorEverywhere) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  expect_outcome(Outcome::kComm, op_label(GetParam()), "dtype", [&] {
    run_op(GetParam(), 7, world().rank() == 0 ? DType::kBF16 : DType::kF32, compressed());
  });
  expect_still_works();
}

TEST_P(ArgsTest, MismatchedCodecIsCommErrorEverywhere) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  expect_outcome(Outcome::kComm, op_label(GetParam()), "codec spec", [&] {
    run_op(GetParam(), 7, DType::kF32,
           compressed(world().rank() == 0 ? "quant:bits=4" : "quant:bits=8"));
  });
  expect_still_works();
}

TEST_P(ArgsTest, MismatchedOptionsAreCommErrorEverywhere) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  // One rank native, the others compressed: only the full check sees it, because by default a
  // rank that goes native skips the agreement (as MPI itself, it cannot know the others do not).
  CollectiveOptions o = compressed();
  o.check_arguments = ArgumentCheck::kAlways;
  if (world().rank() == world().size() - 1) o.algorithm = Algorithm::kNative;
  expect_outcome(Outcome::kComm, op_label(GetParam()), "algorithm",
                 [&] { run_op(GetParam(), 7, DType::kF32, o); });
  o = compressed();
  if (world().rank() == 1) o.segment_bytes = 16;
  expect_outcome(Outcome::kComm, op_label(GetParam()), "segment_bytes",
                 [&] { run_op(GetParam(), 7, DType::kF32, o); });
  expect_still_works();
}

TEST_P(ArgsTest, BadLocalBufferEverywhereIsInvalidArgument) {
  expect_outcome(Outcome::kInvalid, op_label(GetParam()), "",
                 [&] { run_op(GetParam(), 7, DType::kF32, compressed(), true); });
  expect_still_works();
}

TEST_P(ArgsTest, BadLocalBufferOnOneRankIsInvalidArgumentThereCommErrorElsewhere) {
  const int last = world().size() - 1;
  const bool bad = world().rank() == last;
  expect_outcome(bad ? Outcome::kInvalid : Outcome::kComm, op_label(GetParam()),
                 bad ? "" : "rank " + std::to_string(last),
                 [&] { run_op(GetParam(), 7, DType::kF32, compressed(), bad); });
  expect_still_works();
}

TEST_P(ArgsTest, AlgorithmOfAnotherOperationIsInvalidArgument) {
  CollectiveOptions o = compressed();
  o.algorithm = GetParam() == Op::kBroadcast ? Algorithm::kRing : Algorithm::kChain;
  expect_outcome(Outcome::kInvalid, op_label(GetParam()), "does not apply",
                 [&] { run_op(GetParam(), 7, DType::kF32, o); });
  o = compressed();
  o.segment_bytes = 0;
  expect_outcome(Outcome::kInvalid, op_label(GetParam()), "segment_bytes",
                 [&] { run_op(GetParam(), 7, DType::kF32, o); });
  o = compressed();
  o.tag = -1;
  expect_outcome(Outcome::kInvalid, op_label(GetParam()), "tag",
                 [&] { run_op(GetParam(), 7, DType::kF32, o); });
  expect_still_works();
}

INSTANTIATE_TEST_SUITE_P(Ops, ArgsTest,
                         ::testing::Values(Op::kAllreduce, Op::kReduceScatter, Op::kAllgather,
                                           Op::kBroadcast, Op::kAlltoall),
                         [](const ::testing::TestParamInfo<Op>& op) { return op_label(op.param); });

TEST(Args, MismatchedReduceOpIsCommErrorEverywhere) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  const ReduceOp rop = world().rank() == 0 ? ReduceOp::kAverage : ReduceOp::kSum;
  expect_outcome(Outcome::kComm, "allreduce", "reduce op",
                 [&] { run_op(Op::kAllreduce, 7, DType::kF32, compressed(), false, rop); });
  expect_outcome(Outcome::kComm, "reduce_scatter", "reduce op",
                 [&] { run_op(Op::kReduceScatter, 7, DType::kF32, compressed(), false, rop); });
  expect_still_works();
}

TEST(Args, MismatchedRootIsCommErrorEverywhere) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  const int root = world().rank() == 0 ? 1 : 0;
  expect_outcome(Outcome::kComm, "broadcast", "root", [&] {
    run_op(Op::kBroadcast, 7, DType::kF32, compressed(), false, ReduceOp::kSum, root);
  });
  expect_still_works();
}

TEST(Args, OverlappingOrMisalignedBuffersAreInvalidArgument) {
  Buffer b = make_input(DType::kF32, 16, world().rank(), true);
  expect_outcome(Outcome::kInvalid, "allreduce overlap", "overlap", [&] {
    allreduce(world(), view_of(b, 0, 8), view_of(b, 1, 8), ReduceOp::kSum, compressed());
  });
  const TensorView odd{DType::kF32, 4, static_cast<std::byte*>(b.data()) + 2};
  expect_outcome(Outcome::kInvalid, "allreduce misaligned", "aligned",
                 [&] { allreduce(world(), odd, odd, ReduceOp::kSum, compressed()); });
  if (world().size() > 1) {  // with one rank every count is a multiple
    const size_t n = static_cast<size_t>(world().size()) + 1;
    Buffer out(DType::kF32, n);
    expect_outcome(Outcome::kInvalid, "alltoall not a multiple", "multiple",
                   [&] { alltoall(world(), view_of(b, 0, n), out.view(), compressed()); });
  }
  expect_still_works();
}

// hycc's messages use their own tags: an application message with tag 0 in flight across a
// compressed allreduce (options.tag 0) is neither taken nor disturbed by it.
TEST(Args, ApplicationMessagesDoNotMatchHyccMessages) {
  const int p = world().size(), r = world().rank();
  const int app_value = 1000 + r;
  int got_value = -1;
  MPI_Request requests[2];
  MPI_Irecv(&got_value, 1, MPI_INT, (r + p - 1) % p, 0, world().mpi(), &requests[0]);
  MPI_Isend(&app_value, 1, MPI_INT, (r + 1) % p, 0, world().mpi(), &requests[1]);
  const Buffer in = make_input(DType::kF32, 1000, r, true);
  Buffer out(DType::kF32, 1000);
  CollectiveOptions o = compressed("mpc");
  o.segment_bytes = 64;
  allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o);
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  EXPECT_EQ(got_value, 1000 + (r + p - 1) % p);
  expect_bits_equal(out, reference_reduce(gather_all(in), DType::kF32, ReduceOp::kSum),
                    "allreduce beside an application message");
}

// By default the agreement runs before hycc's own algorithms only: a call that goes to native MPI
// (here codec none) costs what MPI costs. A difference that the native call does not depend on
// (the internal tag) then goes unnoticed, while kAlways still reports it.
TEST(Args, NativeCallsSkipTheAgreementUnlessAskedFor) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  const Buffer in = make_input(DType::kF32, 7, world().rank(), true);
  const Buffer expected = reference_reduce(gather_all(in), DType::kF32, ReduceOp::kSum);
  CollectiveOptions o = compressed("none");
  o.tag = world().rank() == 0 ? 1 : 0;
  Buffer out(DType::kF32, 7);
  expect_outcome(Outcome::kOk, "native allreduce, default check", "",
                 [&] { allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o); });
  expect_bits_equal(out, expected, "native allreduce without agreement");
  o.check_arguments = ArgumentCheck::kAlways;
  expect_outcome(Outcome::kComm, "native allreduce, kAlways", "tag",
                 [&] { allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o); });
  o = compressed();
  o.tag = world().rank() == 0 ? 1 : 0;
  expect_outcome(Outcome::kComm, "compressed allreduce, default check", "tag",
                 [&] { allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o); });
  expect_still_works();
}

// allreduce's fast path (float32 sums that go to MPI) against the full path (kAlways, or
// statistics requested): the same bits, in and out of place, and invalid arguments still reported.
TEST(Args, AllreduceFastPathMatchesTheFullPath) {
  for (const size_t n : {size_t(1), size_t(7), size_t(256), size_t(20000)}) {
    for (const bool in_place : {false, true}) {
      const Buffer in = make_input(DType::kF32, n, world().rank(), true);
      Buffer fast = in, full = in, stats = in;
      Buffer fast_out(DType::kF32, n), full_out(DType::kF32, n), stats_out(DType::kF32, n);
      CollectiveOptions o;  // codec none, kAuto: native
      CollectiveOptions always = o;
      always.check_arguments = ArgumentCheck::kAlways;
      CollectiveStats st;
      CollectiveOptions with_stats = o;
      with_stats.stats = &st;
      Buffer& a = in_place ? fast : fast_out;
      Buffer& b = in_place ? full : full_out;
      Buffer& c = in_place ? stats : stats_out;
      allreduce(world(), fast.view(), a.view(), ReduceOp::kSum, o);
      allreduce(world(), full.view(), b.view(), ReduceOp::kSum, always);
      allreduce(world(), stats.view(), c.view(), ReduceOp::kSum, with_stats);
      const std::string what = "n=" + std::to_string(n) + (in_place ? " in place" : "");
      expect_bits_equal(a, b, "fast vs kAlways, " + what);
      expect_bits_equal(a, c, "fast vs stats, " + what);
      expect_bits_equal(a, reference_reduce(gather_all(in), DType::kF32, ReduceOp::kSum), what);
      if (world().size() > 1) {
        EXPECT_EQ(st.algorithm, Algorithm::kNative) << what;
      }
    }
  }
  // Arguments the fast path must not accept reach the full path's checks.
  const Buffer in = make_input(DType::kF32, 64, world().rank(), true);
  Buffer shorter(DType::kF32, 63);
  expect_outcome(Outcome::kInvalid, "allreduce into a shorter buffer", "elements",
                 [&] { allreduce(world(), in.view(), shorter.view(), ReduceOp::kSum, {}); });
  const ConstTensorView odd{DType::kF32, 8, static_cast<const std::byte*>(in.view().data) + 2};
  expect_outcome(Outcome::kInvalid, "misaligned send", "aligned",
                 [&] { allreduce(world(), odd, shorter.view(), ReduceOp::kSum, {}); });
  expect_still_works();
}

TEST(Args, AgreementCanBeSkippedWhenArgumentsMatch) {
  CollectiveOptions o = compressed("mpc");
  o.check_arguments = ArgumentCheck::kNever;
  const Buffer in = make_input(DType::kF32, 7, world().rank(), true);
  Buffer out(DType::kF32, 7);
  allreduce(world(), in.view(), out.view(), ReduceOp::kSum, o);
  expect_bits_equal(out, reference_reduce(gather_all(in), DType::kF32, ReduceOp::kSum),
                    "allreduce without agreement");
}

// Point to point: a receive buffer that does not match the message is a CommError at the
// receiver, after the whole message has been consumed; the sender completes.
TEST(Args, SendRecvMismatchIsCommErrorAtTheReceiver) {
  const int p = world().size(), r = world().rank();
  CollectiveOptions o = compressed("quant:bits=8");
  o.segment_bytes = 16;
  if (!(p % 2 == 1 && r == p - 1) && p > 1) {
    const Buffer data = make_input(DType::kF32, 50, r, true);
    if (r % 2 == 0) {
      expect_outcome(Outcome::kOk, "send", "", [&] { send(world(), data.view(), r + 1, 3, o); });
      expect_outcome(Outcome::kOk, "send", "", [&] { send(world(), data.view(), r + 1, 3, o); });
      expect_outcome(Outcome::kOk, "send", "", [&] { send(world(), data.view(), r + 1, 3, o); });
    } else {
      Buffer short_buffer(DType::kF32, 49), other_dtype(DType::kBF16, 50), right(DType::kF32, 50);
      expect_outcome(Outcome::kComm, "recv count", "50",
                     [&] { recv(world(), short_buffer.view(), r - 1, 3); });
      expect_outcome(Outcome::kComm, "recv dtype", "bf16",
                     [&] { recv(world(), other_dtype.view(), r - 1, 3); });
      expect_outcome(Outcome::kOk, "recv", "", [&] { recv(world(), right.view(), r - 1, 3); });
    }
  }
  Buffer b(DType::kF32, 4);
  expect_outcome(Outcome::kInvalid, "send to self", "destination",
                 [&] { send(world(), b.view(), r, 3, o); });
  expect_outcome(Outcome::kInvalid, "recv from self", "source",
                 [&] { recv(world(), b.view(), r, 3); });
  expect_outcome(Outcome::kInvalid, "negative tag", "tag",
                 [&] { recv(world(), b.view(), MPI_ANY_SOURCE, -1); });
  expect_still_works();
}

}  // namespace
}  // namespace hycc::test
