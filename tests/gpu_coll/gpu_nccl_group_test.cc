// The device collectives over NCCL on a communicator over a group that is not MPI's (comm/group.h,
// as the torch backend makes them for CUDA tensors): the NCCL communicator is made through the
// group's small collectives, the payloads' sizes go over the group's host transport (unless the
// codec fixes them), and every result is the MPI communicator's bit for bit, above the threshold
// (hycc's rings over NCCL) and below it (NCCL's own collectives). Where every rank has a GPU of its
// own (the CUDA emulator: every process); skipped otherwise.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "comm/transport.h"
#include "device_test_util.h"
#include "hycc/collectives_device.h"
#include "mpi_backed_group.h"

namespace hycc::test {
namespace {

// `call` on `comm` of this rank's `x` (n elements; alltoall: n rounded down to a multiple of the
// size), on the device; the result, back on the host.
Buffer run_call(Operation call, const Communicator& comm, const Buffer& x,
                const DeviceCollectiveOptions& o) {
  const int p = comm.size(), r = comm.rank();
  const DType d = x.dtype();
  const size_t n = x.count();
  OnDevice in(x);
  switch (call) {
    case Operation::kAllreduce:
      allreduce_device(comm, in.view(), in.view(), ReduceOp::kAverage, o);
      return in.to_host();
    case Operation::kReduceScatter: {
      OnDevice out(Buffer(d, chunk_range(n, p, r).count));
      reduce_scatter_device(comm, in.view(), out.view(), ReduceOp::kSum, o);
      return out.to_host();
    }
    case Operation::kAllgather: {
      OnDevice out(Buffer(d, n * static_cast<size_t>(p)));
      allgather_device(comm, in.view(), out.view(), o);
      return out.to_host();
    }
    case Operation::kBroadcast:
      broadcast_device(comm, in.view(), p - 1, o);
      return in.to_host();
    case Operation::kAlltoall: {
      const size_t even = n / static_cast<size_t>(p) * static_cast<size_t>(p);
      const TensorView send{d, even, in.view().data};
      OnDevice out(Buffer(d, even));
      alltoall_device(comm, send, out.view(), o);
      return out.to_host();
    }
    case Operation::kSendRecv:
      break;
  }
  return Buffer(d, 0);
}

TEST(GpuNcclGroup, CollectivesEqualTheMpiCommunicators) {
  const Communicator world = Communicator::world();
  if (!comm::nccl_usable(world)) {
    GTEST_SKIP() << "NCCL is not usable here (libnccl.so.2? ranks sharing a GPU?)";
  }
  auto group = std::make_shared<MpiBackedGroup>();
  const Communicator over = Communicator::over(group, "dp");
  EXPECT_TRUE(comm::nccl_usable(over));
  const int combines = group->combines;
  for (const Operation call :
       {Operation::kAllreduce, Operation::kReduceScatter, Operation::kAllgather,
        Operation::kBroadcast, Operation::kAlltoall}) {
    for (const std::string spec : {"none", "eb:abs=1e-2"}) {
      for (const DeviceTransport t : {DeviceTransport::kNccl, DeviceTransport::kAuto}) {
        for (const size_t threshold : {size_t{0}, size_t{1} << 30}) {
          const bool native = threshold != 0;
          if (native && spec != "none") continue;
          DeviceCollectiveOptions o;
          o.codec = CodecConfig::parse(spec);
          o.segment_bytes = 64 << 10;
          o.seed = 9;
          o.transport = t;
          o.threshold_bytes = threshold;
          const DType d = native ? DType::kF32 : DType::kBF16;
          const Buffer x = input(d, kLargeTensor, 300 + static_cast<uint64_t>(world.rank()));
          const int transports = group->transports;
          const Buffer via_group = run_call(call, over, x, o);
          const Buffer via_mpi = run_call(call, world, x, o);
          const std::string what = std::string(operation_name(call)) + " " + spec +
                                   (t == DeviceTransport::kNccl ? " nccl" : " auto") +
                                   (native ? " native" : "");
          EXPECT_TRUE(via_group.bits_equal(via_mpi)) << what;
          // The rings' payload sizes travel over the group's transport, unless the codec fixes
          // them (none, the casts, quant): then nothing does.
          if (!native && world.size() > 1 && spec != "none") {
            EXPECT_GT(group->transports, transports) << what;
          }
          if (spec == "none") {
            EXPECT_EQ(group->transports, transports) << what;
          }
        }
      }
    }
  }
  // nccl_usable and the NCCL communicator were agreed on the group.
  if (world.size() > 1) {
    EXPECT_GT(group->combines, combines);
  }
}

}  // namespace
}  // namespace hycc::test
