// The device collectives with DeviceCollectiveOptions::policy set: the engine decides the codec,
// the call runs with it, and the engine records what it did (as policy_calls.cc does for the
// host calls: gradient compressors through the engine's DeviceGradCompressor; every N-th
// compressed call, gradient calls included, also runs natively and records its error).
#include <chrono>
#include <functional>
#include <mutex>
#include <shared_mutex>

#include "common/host_syncs.h"
#include "hycc/policy_engine.h"
#include "policy/engine_calls.h"
#include "policy/policy_calls.h"

namespace hycc::policy {

void run_with_policy(const Communicator& comm, Operation op, size_t bytes, DType dtype,
                     const DeviceCollectiveOptions& options,
                     const std::function<void(const DeviceCollectiveOptions&)>& call,
                     const std::function<GradStepStats(DeviceGradCompressor&,
                                                       const DeviceCollectiveOptions&)>& gradient) {
  PolicyEngine& engine = *options.policy;
  const PolicyDecision decision =
      options.decision != nullptr ? *options.decision : engine.decide(comm, op, bytes, dtype);
  EngineCalls::log_decision(engine, comm, op, bytes, decision);
  const uint64_t syncs = host_syncs_of_this_thread();
  CollectiveStats stats;
  DeviceCollectiveOptions inner = options;
  inner.policy = nullptr;
  inner.codec = decision.gradient ? decision.gradient_codec : decision.options.codec;
  inner.threshold_bytes = decision.threshold_bytes;
  inner.stats = &stats;
  if (gradient && decision.gradient && comm.size() > 1 && bytes > 0 &&
      bytes >= decision.threshold_bytes) {
    // Sampled as the host's gradient calls are (every N-th compressed call).
    double error = 0;
    const bool sampled = EngineCalls::sample_error(engine, comm, op);
    if (sampled) inner.max_error = &error;
    const auto start = std::chrono::steady_clock::now();
    GradStepStats g;
    {
      // Shared, as the host's gradient calls take it: steps on other communicators run at the
      // same time (DeviceGradCompressor locks its table of states only to find a key's); the
      // engine's save and load take it exclusively, so no state changes under them.
      const std::shared_lock<std::shared_mutex> lock(EngineCalls::grad_mutex(engine));
      g = gradient(engine.device_grad_compressor(decision.compressor), inner);
    }
    if (sampled) EngineCalls::record_error(engine, comm, op, error);
    // As the host's policy path reports a gradient step (policy_calls.cc).
    stats.compressed = g.compressed;
    stats.message_bytes = bytes;
    stats.wire_bytes = g.wire_bytes;
    stats.raw_bytes = g.compressed && g.payload_bytes > 0
                          ? size_t(double(g.wire_bytes) * double(bytes) / double(g.payload_bytes))
                          : g.wire_bytes;
    stats.codec_seconds = g.compress_seconds;
    stats.algorithm = Algorithm::kRing;
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    // Sampled as the host calls are: compressed calls of collectives, every N-th.
    const bool compresses = comm.size() > 1 && bytes > 0 && bytes >= decision.threshold_bytes &&
                            inner.codec.id() != CodecId::kNone;
    double error = 0;
    const bool sampled =
        compresses && op != Operation::kSendRecv && EngineCalls::sample_error(engine, comm, op);
    if (sampled) inner.max_error = &error;
    call(inner);
    if (sampled) EngineCalls::record_error(engine, comm, op, error);
  }
  stats.on_device = true;
  stats.host_syncs = host_syncs_of_this_thread() - syncs;
  if (options.stats != nullptr) *options.stats = stats;
  EngineCalls::record(engine, comm, op, decision, stats);
}

}  // namespace hycc::policy
