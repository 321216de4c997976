// ef+CODEC on device buffers: error feedback around a codec, compress once, the payloads gathered
// round a device ring and summed in rank order, as grad/method_ef.cc does on the host (same
// seeds, same float32 operations in the same order, so the same bits). With a codec whose payload
// size depends only on the count (the casts, quant) the receivers know every payload's size (no
// size messages), and a stream-ordered step leaves its checks to the device and returns once
// queued, as the device collectives do.
#include <chrono>
#include <utility>
#include <vector>

#include "coll/payload_gather.h"
#include "comm/decode_checks.h"
#include "comm/tags.h"
#include "comm/transport.h"
#include "grad/grad_device_state.h"
#include "grad/method.h"

namespace hycc::grad {
GradStepStats ef_device_step(const DeviceStep& s, const CodecConfig& codec, GradState& state) {
  if (s.shard_only) return ef2_device_step(s, codec, state);
  GradStepStats stats;
  stats.elements = s.grad.count;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = s.grad.count;
  const int p = s.comm.size(), me = s.comm.rank();
  DeviceOps& ops = s.ops;
  auto* residual = static_cast<float*>(state.residual.data());
  Memory acc_memory = ops.allocate(n * sizeof(float));
  Memory tmp_memory = ops.allocate(n * sizeof(float));
  auto* acc = static_cast<float*>(acc_memory.data());
  auto* tmp = static_cast<float*>(tmp_memory.data());

  const bool queued_only = s.options.stream_ordered;
  comm::DeferredDecodeChecks checks(ops, queued_only, codec);
  // acc = grad + e; one payload of acc.
  accumulate_gradient(s, true, state, acc);
  const size_t bound = codec.codec().max_payload_bytes(DType::kF32, n);
  Payload own;
  own.memory = allocate_payload(ops, bound);
  own.size = ops.encode(codec, {DType::kF32, n, acc}, own.data(), bound,
                        grad::step_seed(s.tensor.key, state.steps, me));
  stats.payload_bytes = own.size;
  // e = acc - what the peers decode.
  ops.decode(codec, own.data(), own.size, {DType::kF32, n, tmp});
  ops.subtract(acc, tmp, residual, n);

  const auto c0 = std::chrono::steady_clock::now();
  const int tag = comm::internal_tag(s.comm, s.options.tag, Operation::kAllreduce);
  const std::unique_ptr<comm::Transport> transport =
      comm::make_transport(s.comm, ops, s.options, tag, true,
                           comm::fixed_payload_size(codec) ? comm::PayloadSizes::kKnown
                                                           : comm::PayloadSizes::kAnnounced);
  std::vector<Payload> all;
  stats.wire_bytes = coll::allgather_payloads(s.comm, ops, *transport, codec, std::move(own), bound,
                                              n * sizeof(float), all);
  if (queued_only) {
    if (auto pending = transport->deferred_integrity()) comm::defer_integrity(s.comm, pending);
  } else if (const std::string altered = transport->integrity_error(); !altered.empty()) {
    throw CorruptStream(altered);
  }
  stats.comm_seconds = seconds_since(c0);

  // The sum in rank order, ping-ponging between acc and tmp.
  float* sum = acc;
  float* next = tmp;
  ops.decode(codec, all[0].data(), all[0].size, {DType::kF32, n, sum});
  for (size_t j = 1; j < all.size(); ++j) {
    ops.decode_accumulate(codec, all[j].data(), all[j].size, DType::kF32, {DType::kF32, n, sum},
                          next);
    std::swap(sum, next);
  }
  ops.round_into(sum, s.op, p, s.out);
  checks.defer(s.comm);
  if (!queued_only) ops.synchronize();
  stats.compressed = true;
  stats.compress_seconds = seconds_since(t0) - stats.comm_seconds;
  return stats;
}

}  // namespace hycc::grad
