// What the host waits for in a device collective over NCCL (docs/gpu.md, "What the host waits
// for"): host synchronizations, counted by the CUDA emulator (cuda_emu/host.h), and host
// messages, counted here by wrapping the MPI calls that start one (the PMPI profiling interface:
// this executable's definitions take the place of the MPI library's for hycc, which is linked
// into it). Emulator builds only: a real CUDA runtime does not count its synchronizations.
#if defined(HYCC_CUDA_EMULATION)
#include <cuda_emu/host.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "comm/transport.h"
#include "device_test_util.h"
#include "hycc/collectives_device.h"
#include "hycc/grad_device.h"

namespace {

std::atomic<uint64_t> host_message_count{0};
void count_message() { host_message_count.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

// Every MPI call of hycc's core that sends a message or joins a collective (receives are the
// other end of a counted send).
extern "C" {
int MPI_Send(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c) {
  count_message();
  return PMPI_Send(b, n, t, to, tag, c);
}
int MPI_Isend(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c, MPI_Request* r) {
  count_message();
  return PMPI_Isend(b, n, t, to, tag, c, r);
}
int MPI_Issend(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c, MPI_Request* r) {
  count_message();
  return PMPI_Issend(b, n, t, to, tag, c, r);
}
int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  count_message();
  return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Iallreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request* q) {
  count_message();
  return PMPI_Iallreduce(s, r, n, t, op, c, q);
}
int MPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  count_message();
  return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  count_message();
  return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Barrier(MPI_Comm c) {
  count_message();
  return PMPI_Barrier(c);
}
}

namespace hycc::test {
namespace {

struct Waits {
  double syncs = 0;
  double messages = 0;
  double counted = 0;  // the synchronizations hycc counted itself (CollectiveStats::host_syncs)
};

// Runs `op` of `spec` on `n` elements over NCCL once to warm up, then `calls` times; the host
// synchronizations and messages per call of the latter.
Waits measure(Operation op, const std::string& spec, size_t n, int calls, bool checksum) {
  const Communicator world = Communicator::world();
  const int p = world.size(), r = world.rank();
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.transport = DeviceTransport::kNccl;
  o.segment_bytes = 64 << 10;
  o.seed = 3;
  o.checksum = checksum;
  o.stream_ordered = true;
  CollectiveStats stats;
  o.stats = &stats;
  OnDevice in(input(DType::kF32, n, 40 + static_cast<uint64_t>(r)));
  OnDevice out(Buffer(DType::kF32, n * static_cast<size_t>(p)));
  const auto call = [&] {
    switch (op) {
      case Operation::kAllreduce:
        return allreduce_device(world, in.view(), in.view(), ReduceOp::kSum, o);
      case Operation::kReduceScatter:
        return reduce_scatter_device(world, in.view(),
                                     {DType::kF32, chunk_range(n, p, r).count, out.view().data},
                                     ReduceOp::kSum, o);
      case Operation::kAllgather:
        return allgather_device(world, in.view(), out.view(), o);
      case Operation::kBroadcast:
        return broadcast_device(world, in.view(), 0, o);
      case Operation::kAlltoall: {
        const size_t even = n / static_cast<size_t>(p) * static_cast<size_t>(p);
        return alltoall_device(world, {DType::kF32, even, in.view().data},
                               {DType::kF32, even, out.view().data}, o);
      }
      case Operation::kSendRecv:
        break;
    }
  };
  call();
  cudaDeviceSynchronize();
  PMPI_Barrier(MPI_COMM_WORLD);
  const uint64_t syncs = cuda_emu::host_waits(), messages = host_message_count.load();
  uint64_t counted = 0;
  for (int i = 0; i < calls; ++i) {
    call();
    EXPECT_TRUE(stats.on_device);
    counted += stats.host_syncs;
  }
  Waits w{static_cast<double>(cuda_emu::host_waits() - syncs) / calls,
          static_cast<double>(host_message_count.load() - messages) / calls,
          static_cast<double>(counted) / calls};
  cudaDeviceSynchronize();
  PMPI_Barrier(MPI_COMM_WORLD);
  return w;
}

const Operation kCollectives[] = {Operation::kAllreduce, Operation::kReduceScatter,
                                  Operation::kAllgather, Operation::kBroadcast,
                                  Operation::kAlltoall};

// Stream-ordered calls over NCCL with a codec whose payload size is fixed (none, the casts), with
// checksums (written and verified on the device) or without: after a communicator's first call
// of a signature, the host neither waits for the device nor sends a message. The other codecs'
// figures are printed (docs/gpu.md's table) and checked only for what they must not lose: each
// call's own message count.
TEST(GpuHostWaits, StreamOrderedFixedSizeCallsNeverWaitOnTheHost) {
  const Communicator world = Communicator::world();
  if (world.size() < 2 || !comm::nccl_usable(world)) {
    GTEST_SKIP() << "needs 2 ranks and NCCL";
  }
  const size_t n = size_t{1} << 15;  // 128 KiB: 2 segments of 64 KiB per rank at 2 ranks
  // fp16 takes bf16's paths, zfp:rate=8 quant's (docs/gpu.md's table has them, measured so).
  for (const std::string spec : {"none", "bf16", "quant:bits=8", "eb:abs=1e-3"}) {
    const bool fixed = comm::fixed_payload_size(CodecConfig::parse(spec));
    for (const Operation op : kCollectives) {
      for (const bool checksum : {false, true}) {
        if (!fixed && !checksum) continue;  // the default only: their waits are the codec's
        const Waits w = measure(op, spec, n, 2, checksum);
        if (world.rank() == 0) {
          std::printf("host waits  %-14s %-14s %-11s syncs %6.1f  messages %6.1f\n",
                      std::string(operation_name(op)).c_str(), spec.c_str(),
                      checksum ? "checksum" : "no checksum", w.syncs, w.messages);
        }
        const std::string what =
            std::string(operation_name(op)) + " " + spec + (checksum ? " with checksums" : "");
        // What hycc reports (HYCC_LOG=summary on a GPU) is every wait the device saw.
        EXPECT_EQ(w.counted, w.syncs) << what;
        if (fixed) {
          EXPECT_EQ(w.syncs, 0) << what;
          EXPECT_EQ(w.messages, 0) << what;
        }
        if (!fixed) {  // some rank sends the payloads' sizes (a chain's last rank only receives)
          double all = 0;
          PMPI_Allreduce(&w.messages, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          EXPECT_GT(all, 0) << what << ": the payloads' sizes";
        }
      }
    }
  }
}

// A stream-ordered call queued behind a long kernel returns at once; its result is there for the
// work queued after it (the same bits as a blocking call's).
TEST(GpuHostWaits, StreamOrderedCallReturnsBeforeItsWorkIsDone) {
  const Communicator world = Communicator::world();
  if (world.size() < 2 || !comm::nccl_usable(world)) {
    GTEST_SKIP() << "needs 2 ranks and NCCL";
  }
  const size_t n = size_t{1} << 14;
  const Buffer x = input(DType::kF32, n, 70 + static_cast<uint64_t>(world.rank()));
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse("bf16");
  o.transport = DeviceTransport::kNccl;
  o.checksum = false;
  OnDevice blocking(x);
  allreduce_device(world, blocking.view(), blocking.view(), ReduceOp::kSum, o);

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  o.stream = stream;
  o.stream_ordered = true;
  OnDevice queued(x);
  allreduce_device(world, queued.view(), queued.view(), ReduceOp::kSum, o);  // agrees: first
  cudaStreamSynchronize(stream);
  PMPI_Barrier(MPI_COMM_WORLD);
  OnDevice again(x);
  const auto kernel = std::chrono::milliseconds(400);
  cuda_emu::occupy_stream(stream, kernel);
  const auto start = std::chrono::steady_clock::now();
  allreduce_device(world, again.view(), again.view(), ReduceOp::kSum, o);
  const auto returned = std::chrono::steady_clock::now() - start;
  EXPECT_LT(returned, kernel / 2) << "the call waited for the kernel queued before it";
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady) << "the call's work was already done";
  cudaStreamSynchronize(stream);
  EXPECT_TRUE(queued.to_host().bits_equal(blocking.to_host()));
  EXPECT_TRUE(again.to_host().bits_equal(blocking.to_host()));
  cudaStreamDestroy(stream);
}

// A stream-ordered `call` (a collective over NCCL) whose message rank 0 receives altered
// (corrupt_nccl_receives(1, offset)) returns; rank 0 raises CorruptStream naming `what` from its
// next call on the communicator, after queueing that call's part, so no peer waits for it; the
// error is raised once. `no_wait`: the altered call makes no host wait either.
void expect_raised_by_next_call(const std::function<void()>& call, long offset,
                                const std::string& what, bool no_wait) {
  const bool receiver = Communicator::world().rank() == 0;
  call();
  cudaDeviceSynchronize();
  if (receiver) cuda_emu::corrupt_nccl_receives(1, offset);
  const uint64_t waits = cuda_emu::host_waits();
  EXPECT_NO_THROW(call()) << "the altered payload is checked on the device, later";
  if (no_wait) {
    EXPECT_EQ(cuda_emu::host_waits(), waits);
  }
  cudaDeviceSynchronize();
  if (receiver) {
    try {
      call();
      ADD_FAILURE() << "the next call raised nothing";
    } catch (const CorruptStream& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  } else {
    EXPECT_NO_THROW(call());
  }
  cudaDeviceSynchronize();
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NO_THROW(call()) << "raised once";
  cudaDeviceSynchronize();
}

// The same alteration of a blocking `call`: raised by the call itself, on rank 0.
void expect_raised_by_blocking_call(const std::function<void()>& call, long offset) {
  const bool receiver = Communicator::world().rank() == 0;
  call();
  if (receiver) cuda_emu::corrupt_nccl_receives(1, offset);
  if (receiver) {
    EXPECT_THROW(call(), CorruptStream);
  } else {
    EXPECT_NO_THROW(call());
  }
  PMPI_Barrier(MPI_COMM_WORLD);
}

// A payload altered on its way (a flipped bit, found by its checksum).
TEST(GpuHostWaits, AlteredPayloadOfAStreamOrderedCallIsRaisedByTheNextCall) {
  const Communicator world = Communicator::world();
  if (world.size() < 2 || !comm::nccl_usable(world)) {
    GTEST_SKIP() << "needs 2 ranks and NCCL";
  }
  OnDevice x(input(DType::kF32, size_t{1} << 13, 90 + static_cast<uint64_t>(world.rank())));
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse("bf16");
  o.transport = DeviceTransport::kNccl;
  o.stream_ordered = true;
  const auto call = [&] { allreduce_device(world, x.view(), x.view(), ReduceOp::kAverage, o); };
  expect_raised_by_next_call(call, -1, "fails its checksum", false);
  o.stream_ordered = false;
  expect_raised_by_blocking_call(call, -1);
}

// Gradient compressors with error feedback on device buffers (DeviceGradCompressor): hybrid's
// ef2+quant:bits=6 and ef+quant:bits=4. quant's fixed payload size makes every payload's size
// known to every rank, so a stream-ordered step after the first of its signature neither waits
// nor sends a host message; results and residuals are those of the same steps made blocking,
// bit for bit.
TEST(GpuHostWaits, StreamOrderedErrorFeedbackStepsNeverWaitOnTheHost) {
  const Communicator world = Communicator::world();
  if (world.size() < 2 || !comm::nccl_usable(world)) {
    GTEST_SKIP() << "needs 2 ranks and NCCL";
  }
  const size_t n = size_t{1} << 14;
  DeviceCollectiveOptions o;
  o.transport = DeviceTransport::kNccl;
  o.segment_bytes = 64 << 10;
  for (const char* spec : {"ef2+quant:bits=6", "ef+quant:bits=4"}) {
    DeviceGradCompressor ordered(spec), blocking(spec);
    const GradTensor tensor(9);
    const Buffer x = input(DType::kF32, n, 60 + static_cast<uint64_t>(world.rank()));
    OnDevice a(x), b(x), out_a(Buffer(DType::kF32, n)), out_b(Buffer(DType::kF32, n));
    const int steps = 3;
    uint64_t syncs = 0, messages = 0;
    for (int step = 0; step < steps; ++step) {
      blocking.allreduce(world, tensor, b.view(), out_b.view(), ReduceOp::kAverage, o);
      DeviceCollectiveOptions q = o;
      q.stream_ordered = true;
      cudaDeviceSynchronize();
      PMPI_Barrier(MPI_COMM_WORLD);
      const uint64_t s0 = cuda_emu::host_waits(), m0 = host_message_count.load();
      ordered.allreduce(world, tensor, a.view(), out_a.view(), ReduceOp::kAverage, q);
      if (step > 0) {  // the first step agrees on its signature
        syncs += cuda_emu::host_waits() - s0;
        messages += host_message_count.load() - m0;
      }
      cudaDeviceSynchronize();
      EXPECT_TRUE(out_a.to_host().bits_equal(out_b.to_host())) << spec << " step " << step;
    }
    std::printf("host waits  %-18s gradient allreduce  syncs %4.1f  messages %4.1f\n", spec,
                static_cast<double>(syncs) / (steps - 1),
                static_cast<double>(messages) / (steps - 1));
    EXPECT_EQ(syncs, 0u) << spec;
    EXPECT_EQ(messages, 0u) << spec;
    EXPECT_EQ(ordered.residual(9), blocking.residual(9)) << spec;
    PMPI_Barrier(MPI_COMM_WORLD);
  }
}

// Without checksums, a quant payload whose block header arrives malformed is found by the
// decoder's check on the device: the next call raises it, as for a checksum.
TEST(GpuHostWaits, MalformedQuantHeaderOfAStreamOrderedCallIsRaisedByTheNextCall) {
  const Communicator world = Communicator::world();
  if (world.size() < 2 || !comm::nccl_usable(world)) {
    GTEST_SKIP() << "needs 2 ranks and NCCL";
  }
  OnDevice x(input(DType::kF32, size_t{1} << 13, 70 + static_cast<uint64_t>(world.rank())));
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse("quant:bits=8");
  o.transport = DeviceTransport::kNccl;
  o.checksum = false;
  o.stream_ordered = true;
  const auto call = [&] { allreduce_device(world, x.view(), x.view(), ReduceOp::kSum, o); };
  // Bytes 4..7 of a payload: the scale field of its first block, 0xffffffff (malformed).
  expect_raised_by_next_call(call, 4, "malformed", true);
  o.stream_ordered = false;
  expect_raised_by_blocking_call(call, 4);
}

}  // namespace
}  // namespace hycc::test
#endif
