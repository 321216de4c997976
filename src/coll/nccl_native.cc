// Device calls below DeviceCollectiveOptions::threshold_bytes whose transport is NCCL (one GPU
// per rank): NCCL's own collective on the device buffers. The other native path
// (native_staged.cc) copies the data to pinned host memory, makes the MPI call and copies the
// result back; small messages are latency-bound, and NCCL moves them without leaving the GPUs.
//
// The values are those of the host's native path (native_mpi.cc): a reduction sums in float32
// (16-bit inputs widened exactly first, by the cast codecs' decoders) and rounds once into the
// output dtype, divided by the size for an average (DeviceOps::round_into); only the order of the
// sum is NCCL's. Allgather, broadcast and alltoall move bytes. Everything is queued on the call's
// stream, NCCL's collective included, and the call returns when the stream has passed it.
#include <atomic>

#include "coll/device_entry.h"
#include "comm/nccl_link.h"

namespace hycc::coll::device {

using comm::nccl_usable;
using comm::NcclOp;
using comm::queue_nccl_collective;
namespace {

std::atomic<size_t> calls{0};

// `in` as float32: itself, or widened into `scratch`.
float* widened(DeviceOps& ops, ConstTensorView in, Memory& scratch) {
  if (in.dtype == DType::kF32) return static_cast<float*>(const_cast<void*>(in.data));
  scratch = ops.allocate(in.count * sizeof(float));
  static const CodecConfig bf16 = CodecConfig::parse("bf16"), fp16 = CodecConfig::parse("fp16");
  ops.decode(in.dtype == DType::kBF16 ? bf16 : fp16, in.data, in.bytes(),
             {DType::kF32, in.count, scratch.data()});
  return static_cast<float*>(scratch.data());
}

}  // namespace

bool takes_nccl_native(const Communicator& comm, const DeviceAlgorithmOptions& options) {
  if (options.backend != DeviceBackend::kCuda) return false;
  return options.transport == DeviceTransport::kNccl ||
         (options.transport == DeviceTransport::kAuto && nccl_usable(comm));
}

void run_nccl_native(DeviceOps& ops, const Communicator& comm, const CallSpec& call,
                     const DeviceAlgorithmOptions& options,
                     std::chrono::steady_clock::time_point start) {
  const int p = comm.size();
  const size_t n = call.send.count;
  const auto queue = [&](NcclOp op, const void* send, void* recv, size_t count) {
    queue_nccl_collective(comm, options.stream, op, send, recv, count, call.root);
  };
  Memory scratch, sum;
  switch (call.op) {
    case Operation::kAllreduce: {
      // float32 sums into recv itself; a 16-bit one in place in its widened copy.
      float* in = widened(ops, call.send, scratch);
      float* out = call.recv.dtype == DType::kF32 ? static_cast<float*>(call.recv.data) : in;
      queue(NcclOp::kAllreduce, in, out, n);
      if (call.recv.dtype != DType::kF32 || call.reduce == ReduceOp::kAverage) {
        ops.round_into(out, call.reduce, p, call.recv);
      }
      break;
    }
    case Operation::kReduceScatter: {
      // NCCL's reduce-scatter needs equal chunks; other counts sum the whole buffer.
      const float* in = widened(ops, call.send, scratch);
      const ChunkRange mine = chunk_range(n, p, comm.rank());
      const bool even = n % static_cast<size_t>(p) == 0;
      sum = ops.allocate((even ? mine.count : n) * sizeof(float));
      queue(even ? NcclOp::kReduceScatter : NcclOp::kAllreduce, in, sum.data(), n);
      ops.round_into(static_cast<const float*>(sum.data()) + (even ? 0 : mine.offset), call.reduce,
                     p, call.recv);
      break;
    }
    case Operation::kAllgather:
      queue(NcclOp::kAllgather, call.send.data, call.recv.data, call.send.bytes());
      break;
    case Operation::kBroadcast:
      queue(NcclOp::kBroadcast, call.recv.data, call.recv.data, call.recv.bytes());
      break;
    case Operation::kAlltoall: {
      const void* from = call.send.data;
      if (from == call.recv.data) {  // NCCL's sends and receives may not overlap
        scratch = ops.allocate(call.send.bytes());
        ops.copy_device(scratch.data(), from, call.send.bytes());
        from = scratch.data();
      }
      queue(NcclOp::kAlltoall, from, call.recv.data, call.send.bytes() / static_cast<size_t>(p));
      break;
    }
    default:
      throw InvalidArgument(
          tagged("coll:nccl", "no NCCL collective for ", comm::call_name(call.op)));
  }
  if (!options.stream_ordered) ops.synchronize();  // the scratch is freed in stream order
  ++calls;
  report_device(options, nullptr, Algorithm::kNative, call.message_bytes, start);
  if (options.stats != nullptr) {
    options.stats->raw_bytes = options.stats->wire_bytes = call.message_bytes;
  }
}

namespace testing {
size_t nccl_native_calls() { return calls.load(); }
}  // namespace testing

}  // namespace hycc::coll::device
