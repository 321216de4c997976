// The public device collectives (hycc/collectives_device.h): argument checks and the cross-rank
// agreement, the one-rank and empty short-circuits, and the choice of device operations and
// transport. The algorithms live in one file each (ring_phases_device.h).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/device_entry.h"
#include "coll/entry.h"
#include "coll/ring_phases_device.h"
#include "comm/decode_checks.h"
#include "common/host_syncs.h"

namespace hycc::coll::device {

void report_device(const DeviceAlgorithmOptions& options, const Counters* counters, Algorithm ran,
                   size_t message_bytes, std::chrono::steady_clock::time_point start) {
  if (options.stats == nullptr) return;
  CollectiveStats& s = *options.stats;
  s = CollectiveStats{};
  s.algorithm = ran;
  s.message_bytes = message_bytes;
  if (counters != nullptr) {
    s.raw_bytes = counters->raw_bytes;
    s.wire_bytes = counters->wire_bytes;
    s.streams = counters->streams;
    s.codec_seconds = counters->codec_seconds;
    s.compressed = counters->streams > 0 && options.codec.id() != CodecId::kNone;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {

// Runs `algorithm` with a context for this call, then rethrows a deferred decoding error and
// fills the statistics.
template <typename Run>
void run_collective(const Communicator& comm, Operation op, DeviceOps& ops, DType dtype,
                    const DeviceAlgorithmOptions& options, size_t message_bytes,
                    std::chrono::steady_clock::time_point start, Run&& algorithm,
                    Algorithm ran = Algorithm::kRing) {
  const int tag = internal_tag(comm, options.tag, op);
  const std::unique_ptr<Transport> transport =
      make_transport(comm, ops, options, tag, true,
                     comm::fixed_payload_size(options.codec) ? comm::PayloadSizes::kKnown
                                                             : comm::PayloadSizes::kAnnounced);
  DeviceContext ctx{.rank = comm.rank(),
                    .size = comm.size(),
                    .codec = options.codec,
                    .seg_elems = segment_elems(options.segment_bytes, dtype),
                    .seed = options.seed,
                    .ops = ops,
                    .transport = *transport,
                    .errors = {},
                    .counters = {}};
  comm::DeferredDecodeChecks decode_checks(ops, options.stream_ordered, options.codec);
  algorithm(ctx);
  if (options.stream_ordered) {
    // The checksums and the decoders' checks run on the device after the call returns: a later
    // call raises what they find (raise_deferred_integrity).
    if (auto pending = transport->deferred_integrity()) comm::defer_integrity(comm, pending);
    decode_checks.defer(comm);
  } else {
    ops.synchronize();
    const std::string altered = transport->integrity_error();
    if (!altered.empty()) throw CorruptStream(altered);
  }
  ctx.errors.rethrow();
  report_device(options, &ctx.counters, ran, message_bytes, start);
}

}  // namespace

namespace {

void run_call_paths(const Communicator& comm, const CallSpec& call, ArgCheck& check,
                    const std::exception_ptr& unavailable, DeviceOps* ops,
                    const DeviceAlgorithmOptions& options,
                    std::chrono::steady_clock::time_point start) {
  check_device_options(check, comm, call.op, options);
  add_device_fields(check, call.count, call.send.dtype, options);
  const bool agree = comm::needs_agreement(check, comm, options);
  settle(check, comm, unavailable, agree);
  if (agree) comm::agreed(check, comm, options);
  if (options.max_error != nullptr) *options.max_error = 0;
  if (comm.size() == 1 || call.count == 0) {
    if (call.send.data != call.recv.data) {
      ops->copy_device(call.recv.data, call.send.data, call.send.bytes());
    }
    if (!options.stream_ordered) ops->synchronize();
    report_device(options, nullptr, Algorithm::kAuto, call.message_bytes, start);
    return;
  }
  if (call.message_bytes < options.threshold_bytes) {
    if (takes_nccl_native(comm, options)) {
      run_nccl_native(*ops, comm, call, options, start);
    } else {
      run_native_staged(*ops, call.send, call.recv, options, start, call.native);
    }
    comm::raise_deferred_integrity(comm);  // this call's part is queued: no peer waits for it
    return;
  }
  Memory reference;  // the uncompressed result, when the error is asked for
  if (options.max_error != nullptr) {
    reference = native_on_host(*ops, call.send, call.recv, options, call.native, nullptr);
  }
  run_collective(comm, call.op, *ops, call.send.dtype, options, call.message_bytes, start,
                 call.algorithm, call.ran);
  if (options.max_error != nullptr) {
    *options.max_error = max_error_against(*ops, call.result, reference);
  }
  comm::raise_deferred_integrity(comm);
}

}  // namespace

void run_call(const Communicator& comm, const CallSpec& call, ArgCheck& check,
              const std::exception_ptr& unavailable, DeviceOps* ops,
              const DeviceAlgorithmOptions& options, std::chrono::steady_clock::time_point start) {
  const uint64_t syncs = host_syncs_of_this_thread();
  run_call_paths(comm, call, check, unavailable, ops, options, start);
  if (options.stats != nullptr) {
    options.stats->on_device = true;
    options.stats->host_syncs = host_syncs_of_this_thread() - syncs;
  }
}

}  // namespace hycc::coll::device

namespace hycc {

using coll::ArgCheck;
namespace dev = coll::device;

void coll::run_allreduce_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                                ReduceOp op, const DeviceAlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kAllreduce);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_pair(check, ops.get(), "allreduce_device", send, recv);
  dev::check_same_count_or_buffer(check, "allreduce_device", send, recv);
  coll::check_reduce_op(check, op);
  dev::run_call(
      comm,
      {.op = Operation::kAllreduce,
       .send = send,
       .recv = recv,
       .result = recv,
       .count = send.count,
       .message_bytes = send.bytes(),
       .native = [&](ConstTensorView s, TensorView r,
                     const AlgorithmOptions& o) { coll::run_allreduce(comm, s, r, op, o); },
       .algorithm =
           [&](dev::DeviceContext& ctx) { dev::allreduce_ring_device(ctx, send, recv, op); },
       .ran = Algorithm::kRing,
       .reduce = op},
      check, unavailable, ops.get(), options, start);
}

void coll::run_reduce_scatter_device(const Communicator& comm, ConstTensorView send,
                                     TensorView recv, ReduceOp op,
                                     const DeviceAlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kReduceScatter);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_pair(check, ops.get(), "reduce_scatter_device", send, recv);
  const ChunkRange mine = chunk_range(send.count, comm.size(), comm.rank());
  if (check.ok() && recv.count != mine.count) {
    check.fail(tagged("coll", "reduce_scatter_device: recv has ", recv.count, " elements, rank ",
                      comm.rank(), "'s chunk of ", send.count, " has ", mine.count));
  }
  if (check.ok() && recv.data != coll::slice(send, mine.offset, mine.count).data &&
      coll::overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(tagged("coll", "reduce_scatter_device: recv overlaps send without being this ",
                      "rank's chunk of it"));
  }
  coll::check_reduce_op(check, op);
  dev::run_call(
      comm,
      {.op = Operation::kReduceScatter,
       .send = send,
       .recv = recv,
       .result = recv,
       .count = send.count,
       .message_bytes = send.bytes(),
       .native = [&](ConstTensorView s, TensorView r,
                     const AlgorithmOptions& o) { coll::run_reduce_scatter(comm, s, r, op, o); },
       .algorithm =
           [&](dev::DeviceContext& ctx) { dev::reduce_scatter_ring_device(ctx, send, recv, op); },
       .ran = Algorithm::kRing,
       .reduce = op},
      check, unavailable, ops.get(), options, start);
}

void coll::run_allgather_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                                const DeviceAlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kAllgather);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_pair(check, ops.get(), "allgather_device", send, recv);
  const size_t p = static_cast<size_t>(comm.size());
  if (check.ok() && (send.count > SIZE_MAX / p || recv.count != p * send.count)) {
    check.fail(tagged("coll", "allgather_device: recv has ", recv.count, " elements, ", p,
                      " ranks x ", send.count, " expected"));
  }
  const size_t own_at = static_cast<size_t>(comm.rank()) * send.count;
  if (check.ok() && send.data != coll::slice(recv, own_at, send.count).data &&
      coll::overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(
        tagged("coll", "allgather_device: send overlaps recv without being this rank's ", "block"));
  }
  dev::run_call(
      comm,
      {.op = Operation::kAllgather,
       .send = send,
       .recv = recv,
       .result = recv,
       .count = send.count,
       .message_bytes = recv.bytes(),
       .native = [&](ConstTensorView s, TensorView r,
                     const AlgorithmOptions& o) { coll::run_allgather(comm, s, r, o); },
       .algorithm = [&](dev::DeviceContext& ctx) { dev::allgather_ring_device(ctx, send, recv); },
       .ran = Algorithm::kRing},
      check, unavailable, ops.get(), options, start);
}

void coll::run_broadcast_device(const Communicator& comm, TensorView buffer, int root,
                                const DeviceAlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kBroadcast);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_device_view(check, ops.get(), "broadcast_device", "buffer", buffer);
  if (root < 0 || root >= comm.size()) {
    check.fail(
        tagged("coll", "broadcast_device: root ", root, " out of range [0, ", comm.size(), ")"));
  }
  check.field("root", root);
  dev::run_call(
      comm,
      {.op = Operation::kBroadcast,
       .send = buffer,
       .recv = buffer,
       .result = buffer,
       .count = buffer.count,
       .message_bytes = buffer.bytes(),
       .native =
           [&](ConstTensorView s, TensorView r, const AlgorithmOptions& o) {
             std::memcpy(r.data, s.data, s.bytes());
             coll::run_broadcast(comm, r, root, o);
           },
       .algorithm =
           [&](dev::DeviceContext& ctx) { dev::broadcast_chain_device(ctx, buffer, root); },
       .ran = Algorithm::kChain,
       .root = root},
      check, unavailable, ops.get(), options, start);
}

void coll::run_alltoall_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                               const DeviceAlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kAlltoall);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_pair(check, ops.get(), "alltoall_device", send, recv);
  dev::check_same_count_or_buffer(check, "alltoall_device", send, recv);
  if (check.ok() && send.count % static_cast<size_t>(comm.size()) != 0) {
    check.fail(tagged("coll", "alltoall_device: ", send.count, " elements are not a multiple of ",
                      comm.size(), " ranks"));
  }
  dev::run_call(
      comm,
      {.op = Operation::kAlltoall,
       .send = send,
       .recv = recv,
       .result = recv,
       .count = send.count,
       .message_bytes = send.bytes(),
       .native = [&](ConstTensorView s, TensorView r,
                     const AlgorithmOptions& o) { coll::run_alltoall(comm, s, r, o); },
       .algorithm =
           [&](dev::DeviceContext& ctx) { dev::alltoall_pairwise_device(ctx, send, recv); },
       .ran = Algorithm::kPairwise},
      check, unavailable, ops.get(), options, start);
}

}  // namespace hycc
