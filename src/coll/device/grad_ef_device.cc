// ef+CODEC on device buffers: error feedback around a codec, compress once, the payloads gathered
// round a device ring and summed in rank order, as grad/method_ef.cc does on the host (same
// seeds, same float32 operations in the same order, so the same bits).
#include <chrono>
#include <utility>
#include <vector>

#include "coll/device/device_entry.h"
#include "coll/device/device_ring.h"
#include "coll/device/grad_device_state.h"
#include "grad/method.h"

namespace hycc::coll::device {
namespace {

// Gathers every rank's payload round the ring: all[j] = rank j's payload (all[me] = own, moved).
void gather_payloads(DeviceContext& ctx, Payload&& own, size_t bound, size_t raw,
                     std::vector<Payload>& all) {
  const int p = ctx.size, me = ctx.rank;
  all.resize(static_cast<size_t>(p));
  DeviceRingSchedule ring;
  ring.steps = p - 1;
  ring.first_segments = 1;
  ring.recv_segments = [](int) { return size_t{1}; };
  ring.recv_capacity = [&](int, size_t) { return bound; };
  ring.max_payload = bound;
  const auto copy = [&](const Payload& from, Payload& to) {
    ctx.ops.copy_device(to.data(), from.data(), from.size);
    to.size = from.size;
    to.raw_bytes = raw;
    to.checksum = from.checksum;  // forwarded as received
    to.has_checksum = from.has_checksum;
  };
  ring.first = [&](size_t, Payload& out) { copy(own, out); };
  ring.arrived = [&](int t, size_t, Payload& in, Payload& out) {
    Payload& slot = all[static_cast<size_t>((me - 1 - t + 2 * p) % p)];
    std::swap(in, slot);
    if (t + 1 < ring.steps) copy(slot, out);
  };
  if (p > 1) run_device_ring(ctx, ring);
  all[static_cast<size_t>(me)] = std::move(own);
}

}  // namespace

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
  const int tag = coll::internal_tag(s.comm.mpi(), s.options.tag, coll::OpKind::kAllreduce);
  const std::unique_ptr<Transport> transport = make_transport(s.comm, ops, s.options, tag, true);
  DeviceContext ctx{.rank = me,
                    .size = p,
                    .codec = codec,
                    .seg_elems = n,
                    .seed = 0,
                    .ops = ops,
                    .transport = *transport,
                    .errors = {},
                    .counters = {}};
  std::vector<Payload> all;
  gather_payloads(ctx, std::move(own), bound, n * sizeof(float), all);
  if (!transport->integrity_error().empty()) throw CorruptStream(transport->integrity_error());
  stats.comm_seconds = seconds_since(c0);
  stats.wire_bytes = ctx.counters.wire_bytes;

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
  ops.synchronize();
  stats.compressed = true;
  stats.compress_seconds = seconds_since(t0) - stats.comm_seconds;
  return stats;
}

}  // namespace hycc::coll::device
