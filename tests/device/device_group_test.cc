// The device collectives on a communicator over a group that is not MPI's (comm/group.h, as the
// torch backend makes them), host-emulated device: the payloads are staged over the group's own
// host transport, the argument agreement and the gradient compressors' small collectives run on
// the group, and every result is the MPI communicator's bit for bit. The NCCL transport over a
// group runs on the CUDA emulator (tests/gpu_coll).
#include "coll_test_util.h"
#include "hycc/collectives_device.h"
#include "hycc/policy_engine.h"
#include "mpi_backed_group.h"

namespace hycc::test {
namespace {

DeviceCollectiveOptions emulated(const std::string& spec, DeviceTransport transport) {
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.segment_bytes = 16 << 10;
  o.seed = 7;
  o.backend = DeviceBackend::kHostEmulation;
  o.transport = transport;
  return o;
}

// Runs `call` on the group's communicator and on the MPI one, each on its own copy of `start`,
// and expects the same bits; the group must have carried the call (a transport of its own).
template <typename Call>
void expect_group_matches_mpi(GroupBesideMpi& g, const Buffer& start, const std::string& what,
                              Call&& call) {
  Buffer via_group = clone(start), via_mpi = clone(start);
  const int transports = g.group->transports;
  call(g.over, via_group);
  call(g.mpi, via_mpi);
  expect_bits_equal(via_group, via_mpi, what);
  if (world().size() > 1) {
    EXPECT_GT(g.group->transports, transports) << what;
  }
}

TEST(DeviceGroup, CollectivesMatchMpiBitForBit) {
  GroupBesideMpi g;
  const int p = world().size(), r = world().rank();
  const size_t n = 30011;  // uneven chunks, several segments
  for (const std::string spec : {"none", "quant:bits=4", "bf16", "eb:abs=1e-3"}) {
    for (const DeviceTransport t : {DeviceTransport::kAuto, DeviceTransport::kStagedMpi}) {
      const DeviceCollectiveOptions o = emulated(spec, t);
      const std::string what = spec + (t == DeviceTransport::kAuto ? " auto" : " staged");
      // allreduce in place, average.
      expect_group_matches_mpi(g, make_input(DType::kF32, n, r, false), "allreduce " + what,
                               [&](const Communicator& c, Buffer& b) {
                                 allreduce_device(c, b.view(), b.view(), ReduceOp::kAverage, o);
                               });
      // reduce_scatter: the result in the second half of the buffer.
      const ChunkRange mine = chunk_range(n, p, r);
      expect_group_matches_mpi(g, make_input(DType::kF32, n, r, false), "reduce_scatter " + what,
                               [&](const Communicator& c, Buffer& b) {
                                 Buffer out(DType::kF32, mine.count);
                                 reduce_scatter_device(c, b.view(), out.view(), ReduceOp::kSum, o);
                                 std::memcpy(b.data(), out.data(), out.view().bytes());
                               });
      // allgather in place: this rank's block of the output.
      expect_group_matches_mpi(g, make_input(DType::kBF16, n * static_cast<size_t>(p), r, false),
                               "allgather " + what, [&](const Communicator& c, Buffer& b) {
                                 allgather_device(c, view_of(b, static_cast<size_t>(r) * n, n),
                                                  b.view(), o);
                               });
      expect_group_matches_mpi(
          g, make_input(DType::kF32, n, r, false), "broadcast " + what,
          [&](const Communicator& c, Buffer& b) { broadcast_device(c, b.view(), p - 1, o); });
      const size_t blocks = 997 * static_cast<size_t>(p);
      expect_group_matches_mpi(g, make_input(DType::kF16, blocks, r, false), "alltoall " + what,
                               [&](const Communicator& c, Buffer& b) {
                                 Buffer out(DType::kF16, blocks);
                                 alltoall_device(c, b.view(), out.view(), o);
                                 std::memcpy(b.data(), out.data(), out.view().bytes());
                               });
    }
  }
}

// A policy's gradient compressor with error feedback (hybrid's dp rule, ef2) over the group:
// its small collectives (the agreed block size) run on the group; the same bits as on MPI, step
// after step (the residuals carry over).
TEST(DeviceGroup, GradientCompressorMatchesMpi) {
  GroupBesideMpi g;
  PolicyEngine over_engine(Policy::preset("hybrid")), mpi_engine(Policy::preset("hybrid"));
  const size_t n = size_t{1} << 16;  // above hybrid's threshold
  for (uint64_t step = 0; step < 3; ++step) {
    const Buffer grad = make_input(DType::kF32, n, world().rank() + static_cast<int>(step), false);
    Buffer via_group = clone(grad), via_mpi = clone(grad);
    DeviceCollectiveOptions o = emulated("none", DeviceTransport::kAuto);
    o.key = 11;
    o.policy = &over_engine;
    allreduce_device(g.over, via_group.view(), via_group.view(), ReduceOp::kAverage, o);
    o.policy = &mpi_engine;
    allreduce_device(g.mpi, via_mpi.view(), via_mpi.view(), ReduceOp::kAverage, o);
    expect_bits_equal(via_group, via_mpi, "ef2 step " + std::to_string(step));
  }
  const CommStats stats = over_engine.stats();
  const StatsEntry* e = stats.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->calls, 3u);
  if (world().size() > 1) {
    EXPECT_EQ(e->compressed_calls, 3u);
  }
}

TEST(DeviceGroup, HostEmulatedNcclSaysItNeedsMpi) {
  if (world().size() < 2) GTEST_SKIP() << "one rank returns before any transport";
  GroupBesideMpi g;
  Buffer b = make_input(DType::kF32, 1000, world().rank(), false);
  expect_outcome(Outcome::kInvalid, "nccl stand-in over a group", "MPI communicators", [&] {
    allreduce_device(g.over, b.view(), b.view(), ReduceOp::kSum,
                     emulated("quant:bits=4", DeviceTransport::kNccl));
  });
}

}  // namespace
}  // namespace hycc::test
