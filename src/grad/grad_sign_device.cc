// sign on device buffers: the two stages of grad/method_sign.cc with the chunk coding on the
// device (DeviceOps::sign_*, the bits of grad/sign_codec.h) and the words moved by the device
// collectives with codec none (alltoall, then allgather: the bytes unchanged). The same float32
// operations in the same order as the host method, so the same results and residuals. A
// reduce-scatter (shard_only) stops after the server's sum, as on the host.
#include <chrono>

#include "grad/grad_device_state.h"
#include "grad/method.h"
#include "grad/sign_block.h"

namespace hycc::grad {

GradStepStats sign_device_step(const DeviceStep& s, bool error_feedback, GradState& state) {
  const auto t0 = std::chrono::steady_clock::now();
  GradStepStats stats;
  stats.elements = s.grad.count;
  DeviceOps& ops = s.ops;
  const size_t n = s.grad.count;
  const int p = s.comm.size(), me = s.comm.rank();
  const size_t pz = static_cast<size_t>(p);
  const size_t block = grad::sign::chunk_words(chunk_range(n, p, 0).count);
  const ChunkRange mine = chunk_range(n, p, me);

  if (error_feedback && !s.shard_only && state.aux_count != mine.count) {
    state.aux = device_zeros(ops, mine.count);
    state.aux_count = mine.count;
  }
  const DeviceWords acc(ops, n);  // grad + e_w (the worker residual) or grad
  accumulate_gradient(s, error_feedback, state, acc.f());

  // 1. Worker: every chunk encoded, e_w = acc - decoded; chunk j to rank j.
  const DeviceWords send(ops, block * pz), recv(ops, block * pz);
  s.kernels.sign_encode(acc.f(), n, p, block, send.w());
  auto* residual = static_cast<float*>(state.residual.data());
  if (error_feedback) {
    s.kernels.sign_decode(send.w(), block, p, n, residual);
    ops.subtract(acc.f(), residual, residual, n);
  }
  CommClock timed;
  timed([&] {
    alltoall_device(s.comm, words_view(send, block * pz), words_view(recv, block * pz), s.options);
  });

  // 2. Server: this rank's chunk summed in rank order (+ e_s), encoded, e_s = s - decoded.
  const DeviceWords sum(ops, mine.count), own_words(ops, block), all(ops, block * pz);
  auto* server_residual = static_cast<float*>(state.aux.data());
  const bool serve = error_feedback && !s.shard_only;
  s.kernels.sign_server_sum(recv.w(), block, p, mine.count, s.op, serve ? server_residual : nullptr,
                            sum.f());
  stats.payload_bytes = block * 4 * pz;
  stats.compressed = true;
  if (s.shard_only) {  // this rank's chunk, exact: no server stage
    ops.round_into(sum.f(), ReduceOp::kSum, 1, s.out);
    ops.synchronize();
    stats.wire_bytes = block * 4 * (pz - 1);
    timed.settle(stats, t0);
    return stats;
  }
  s.kernels.sign_encode(sum.f(), mine.count, 1, block, own_words.w());
  if (error_feedback) {
    s.kernels.sign_decode(own_words.w(), block, 1, mine.count, server_residual);
    ops.subtract(sum.f(), server_residual, server_residual, mine.count);
  }
  timed([&] {
    allgather_device(s.comm, words_view(own_words, block), words_view(all, block * pz), s.options);
  });

  // Every rank decodes every server's chunk.
  s.kernels.sign_decode(all.w(), block, p, n, acc.f());
  ops.round_into(acc.f(), ReduceOp::kSum, 1, s.out);
  ops.synchronize();
  stats.wire_bytes = 2 * block * 4 * (pz - 1);
  timed.settle(stats, t0);
  return stats;
}

}  // namespace hycc::grad
