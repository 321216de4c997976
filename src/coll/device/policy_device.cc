// The device collectives with DeviceCollectiveOptions::policy set: the engine decides the codec,
// the call runs with it, and the engine records what it did (as policy_calls.cc does for the
// host calls, without the gradient compressors and the error sampling, which have no device
// version yet).
#include "coll/device/device_entry.h"
#include "hycc/policy_engine.h"

namespace hycc::coll::device {

CodecConfig device_codec_of(const PolicyDecision& decision, size_t bytes) {
  if (bytes < decision.threshold_bytes) return CodecConfig{};
  const CodecConfig& codec = decision.gradient ? decision.gradient_codec : decision.options.codec;
  return has_device_codec(codec) ? codec : CodecConfig{};
}

void run_with_policy(const Communicator& comm, Operation op, size_t bytes,
                     const DeviceCollectiveOptions& options,
                     const std::function<void(const DeviceCollectiveOptions&)>& call) {
  PolicyEngine& engine = *options.policy;
  const PolicyDecision decision = engine.decide(comm, op, bytes);
  engine.log_decision(comm, op, bytes, decision);
  CollectiveStats stats;
  DeviceCollectiveOptions inner = options;
  inner.policy = nullptr;
  inner.codec = device_codec_of(decision, bytes);
  inner.stats = &stats;
  call(inner);
  if (options.stats != nullptr) *options.stats = stats;
  engine.record(comm, op, decision, stats);
}

}  // namespace hycc::coll::device
