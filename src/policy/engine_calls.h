// The engine's calls that only the library makes (the policy path of the collectives, the
// drop-in library): PolicyEngine keeps them private, so that applications see only what
// hycc/policy_engine.h documents for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <span>
#include <string>

#include "hycc/grad.h"
#include "hycc/policy_engine.h"

namespace hycc::policy {

struct EngineCalls {
  // Records a call the engine decided (its statistics per dimension and operation).
  static void record(PolicyEngine& e, const Communicator& comm, Operation op,
                     const PolicyDecision& decision, const CollectiveStats& call) {
    e.record(comm, op, decision, call);
  }
  static void record_error(PolicyEngine& e, const Communicator& comm, Operation op,
                           double max_abs_error) {
    e.record_error(comm, op, max_abs_error);
  }
  // True when this compressed call is to be compared with an uncompressed one.
  static bool sample_error(PolicyEngine& e, const Communicator& comm, Operation op) {
    return e.sample_error(comm, op);
  }
  static void log_decision(PolicyEngine& e, const Communicator& comm, Operation op, size_t bytes,
                           const PolicyDecision& decision) {
    e.log_decision(comm, op, bytes, decision);
  }
  // PolicyEngine::buffer_grad_key: the key of a gradient compressor's state for a buffer.
  static uint64_t buffer_grad_key(PolicyEngine& e, const void* data, size_t count, size_t bytes,
                                  const Communicator& comm, Operation op) {
    return e.buffer_grad_key(data, count, bytes, comm, op);
  }
  // PolicyEngine::drop_grad_states and drop_buffer_states: for a caller that keys its gradient
  // calls itself (the torch backend's step keys).
  static uint64_t drop_grad_states(PolicyEngine& e, std::span<const uint64_t> keys) {
    return e.drop_grad_states(keys);
  }
  static uint64_t drop_buffer_states(PolicyEngine& e) { return e.drop_buffer_states(); }
  // Shared by gradient compressor steps; loading states and device steps take it alone.
  static std::shared_mutex& grad_mutex(PolicyEngine& e) { return e.grad_mutex(); }

  // One error-feedback step of the engine's gradient compressor `spec` on `input` under
  // `tensor`'s key (grad/engine.h's feedback_step), for the drop-in library's nonblocking
  // gradient calls, which start their exchanges inside `run`. Hold grad_mutex() shared.
  using FeedbackRun = std::function<void(std::span<float> residual, uint64_t seed,
                                         std::span<float> server, uint64_t server_seed)>;
  static void feedback_step(PolicyEngine& e, const std::string& spec, const GradTensor& tensor,
                            ConstTensorView input, int rank, int size, const FeedbackRun& run);
};

}  // namespace hycc::policy
