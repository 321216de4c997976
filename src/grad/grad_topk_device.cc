// topk on device buffers: the step of grad/method_topk.cc with the selection, the payload and the
// residual on the device (DeviceOps::topk_encode: what select_topk chooses, in its order), the
// payloads moved by allgather_device with codec none, and the sum of every rank's pairs in rank
// order (DeviceOps::topk_accumulate). The same float32 operations in the same order as the host
// method, so the same results and residuals.
#include <chrono>
#include <limits>

#include "grad/grad_device_state.h"
#include "grad/method.h"
#include "grad/topk_select.h"

namespace hycc::grad {

GradStepStats topk_device_step(const DeviceStep& s, const grad::GradSpec& spec, GradState& state) {
  const auto t0 = std::chrono::steady_clock::now();
  GradStepStats stats;
  stats.elements = s.grad.count;
  DeviceOps& ops = s.ops;
  const size_t n = s.grad.count;
  const int p = s.comm.size();
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw InvalidArgument(tagged("grad:device", "topk on the device takes tensors of up to 2^32 ",
                                 "- 1 elements, not ", n));
  }
  const size_t k = grad::topk_count(spec, n);
  const int bits = grad::index_bits(n);
  const size_t words = k + grad::packed_words(k, bits);

  const Memory acc_memory = ops.allocate(n * sizeof(float));  // grad + e or grad
  auto* acc = static_cast<float*>(acc_memory.data());
  accumulate_gradient(s, spec.error_feedback, state, acc);

  // This rank's k largest, sent exactly: the residual is acc without them.
  const Memory mine = ops.allocate(words * 4), all = ops.allocate(words * 4 * size_t(p));
  s.kernels.topk_encode(acc, n, k, bits, static_cast<uint32_t*>(mine.data()),
                        spec.error_feedback ? static_cast<float*>(state.residual.data()) : nullptr);
  const auto c0 = std::chrono::steady_clock::now();
  allgather_device(s.comm, {DType::kF32, words, mine.data()},
                   {DType::kF32, words * size_t(p), all.data()}, s.options);
  stats.comm_seconds = seconds_since(c0);

  // Every rank's pairs added into zeros in rank order.
  ops.zero(acc, n * sizeof(float));
  const int bad = s.kernels.topk_accumulate(static_cast<const uint32_t*>(all.data()), words, p, k,
                                            bits, n, acc);
  if (bad >= 0) {
    throw CorruptStream(
        tagged("grad", "topk: rank ", bad, " sent an index beyond the tensor's ", n, " elements"));
  }
  ops.round_into(acc, s.op, p, s.out);
  ops.synchronize();
  stats.payload_bytes = words * 4;
  stats.wire_bytes = grad::allgather_wire(words * 4, p);
  stats.compressed = true;
  stats.compress_seconds = seconds_since(t0) - stats.comm_seconds;
  return stats;
}

}  // namespace hycc::grad
