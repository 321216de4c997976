// The policy at work: a PolicyEngine decides, for every collective handed to it, which compressor
// runs (Policy::decide on the communicator's dimension, the operation and the message size), runs
// the call, and records what it cost in its CommStats.
//
// Hand an engine to any collective through CollectiveOptions::policy:
//
//   hycc::PolicyEngine engine = hycc::PolicyEngine::from_environment("hybrid");
//   hycc::CollectiveOptions o;
//   o.policy = &engine;
//   hycc::allreduce(grid.dp(), grad, grad, hycc::ReduceOp::kAverage, o);  // dp rule applies
//   ...
//   engine.finish(world);  // HYCC_LOG: summary table, JSON
//
// With a policy set, the decision replaces options.codec and options.threshold_bytes; the other
// fields (algorithm, segment size, seed, tag, argument check, stats) still apply. A gradient
// compressor decision (e.g. "ef+quant:bits=4") runs grad_allreduce or grad_reduce_scatter with
// the engine's compressor of that spec, keyed by options.key, with options.pieces (a bucket's
// tensors, for PowerSGD); elsewhere (operations that are not
// reductions, or a non-sum reduction) it degrades to the codec it wraps ("ef+quant:bits=4" ->
// "quant:bits=4", powersgd/topk/sign -> none). send() follows the policy; recv() needs no policy.
//
// Environment (from_environment):
//   HYCC_POLICY        preset name or TOML file (Policy::from_environment)
//   HYCC_LOG           comma-separated: off | summary | calls | decisions | json=FILE
//                      summary: finish() prints the statistics of all ranks on rank 0 (stderr);
//                      calls: one stderr line per call; decisions: explain() each new decision
//                      once; json=FILE: finish() writes the statistics as JSON (rank 0).
//   HYCC_SAMPLE_ERROR  N >= 1: every N-th compressed call of a dimension and operation also runs
//                      uncompressed, and the largest difference is recorded (0: never, default)
//   HYCC_POOL_MIB      N: the process keeps at most N MiB of large scratch buffers of each
//                      element type for the next call (default 256; 0 keeps none)
//
// An engine is used by one thread at a time, or by several with calls on distinct communicators
// (the statistics and the compressor table are locked; concurrent gradient steps of one spec
// share its compressor, each with a worker of its own, on tensors of their own: grad/engine.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/grad.h"
#include "hycc/policy.h"
#include "hycc/stats.h"

namespace hycc {

class DeviceGradCompressor;      // hycc/grad_device.h
struct DeviceCollectiveOptions;  // hycc/collectives_device.h

// A communicator's links as adaptive rules see them: one ring exchange, the slowest rank's view.
struct LinkFigures {
  double latency = 0;    // seconds per message
  double bandwidth = 0;  // bytes per second each way; 0: unknown (the model ignores bandwidth)
};

// What HYCC_LOG asks for.
struct LogOptions {
  bool summary = false;    // finish(): the statistics table on rank 0
  bool calls = false;      // one line per call
  bool decisions = false;  // explain() each distinct decision once
  std::string json_path;   // finish(): the statistics as JSON, written by rank 0
  // Warn once (rank 0 of the communicator) when a gradient compressor's allreduce sent more
  // bytes than the uncompressed ring would have (e.g. ef+CODEC on many ranks). Off with "off".
  bool warnings = true;

  // "off" (nothing, no warnings), "" (warnings only) or a comma list of summary, calls,
  // decisions, json=FILE. Throws InvalidArgument naming the bad item and the allowed ones.
  static LogOptions parse(std::string_view spec);
};

struct EngineOptions {
  LogOptions log;
  uint64_t sample_error_every = 0;  // see HYCC_SAMPLE_ERROR
  std::FILE* log_file = stderr;     // where calls, decisions and the summary go
  // The process's scratch pool limit, set when an engine is made with it (HYCC_POOL_MIB).
  std::optional<size_t> pool_limit_bytes;

  // HYCC_LOG, HYCC_SAMPLE_ERROR and HYCC_POOL_MIB (HYCC_POLICY is not read). Throws
  // InvalidArgument naming the variable for a bad value.
  static EngineOptions from_environment();
};

namespace policy {
class BufferKeys;
struct EngineCalls;
}  // namespace policy

// What a PolicyEngine's gradient compressors hold (PolicyEngine::gradient_states).
struct GradientStates {
  uint64_t tensors = 0;       // states, host and device
  uint64_t host_bytes = 0;    // residuals, server residuals, PowerSGD's Q in host memory
  uint64_t device_bytes = 0;  // the same in device memory
  // States of buffer-derived keys dropped because memory overlapping them then keyed another
  // buffer (buffer_grad_key): many mean a program's buffers seldom recur at one place and
  // length (a fusion buffer at changing lengths), so error feedback keeps starting over.
  uint64_t dropped = 0;
};

class PolicyEngine {
 public:
  explicit PolicyEngine(Policy policy, EngineOptions options = {});
  ~PolicyEngine();
  PolicyEngine(PolicyEngine&&) noexcept;
  PolicyEngine& operator=(PolicyEngine&&) noexcept;

  // HYCC_POLICY (fallback: a preset name), HYCC_LOG, HYCC_SAMPLE_ERROR and HYCC_POOL_MIB.
  // Throws InvalidArgument naming the variable for a bad value.
  static PolicyEngine from_environment(std::string_view fallback = "baseline");

  const Policy& policy() const { return policy_; }
  const EngineOptions& options() const { return options_; }

  // The decision for a call on `comm` (its dimension from dimension_of), without measurements:
  // an adaptive rule gives its compressor.
  PolicyDecision decide(const Communicator& comm, Operation op, size_t bytes,
                        DType dtype = DType::kF32) const;
  // The decision the collectives use: for an adaptive rule, the candidate whose modelled time on
  // comm's links is the smallest (docs/policy.md, "Adaptive rules"). The first such call of a
  // collective operation on a communicator measures its links, and the first for a dtype the
  // candidates' codecs; both are collective over comm and agreed by its ranks, so every rank
  // decides alike. A send (op kSendRecv) never communicates to decide: without link figures
  // for comm it takes the rule's compressor, and it measures codecs on this rank alone.
  PolicyDecision choose(const Communicator& comm, Operation op, size_t bytes, DType dtype);
  // choose() for a call whose decide() the caller has already taken (`decided`, for the same
  // communicator, operation, size and dtype): the same result without deciding again.
  PolicyDecision choose(const Communicator& comm, Operation op, size_t bytes, DType dtype,
                        PolicyDecision decided);
  // Measures comm's links now (again), for the adaptive rules. Collective over comm.
  LinkFigures calibrate(const Communicator& comm);
  // Sets comm's link figures instead of measuring them; call it with the same figures on every
  // rank of comm.
  void set_link(const Communicator& comm, const LinkFigures& link);
  // comm's link figures, if measured or set.
  std::optional<LinkFigures> link(const Communicator& comm) const;

  // This rank's statistics (a copy, taken under the lock).
  CommStats stats() const;
  // The statistics of every rank of `comm` summed (largest error: the maximum), on every rank.
  // Collective over comm.
  CommStats reduce_stats(const Communicator& comm) const;
  // The end of a run, collective over `comm` (usually the world): what HYCC_LOG asked for (the
  // statistics, and the gradient compressors' states: tensors and bytes of the rank with most).
  void finish(const Communicator& comm) const;
  // This rank's gradient compressor states, between steps.
  GradientStates gradient_states() const;

  // The gradient compressors the engine made, by spec (save their state for checkpoints).
  GradCompressor& grad_compressor(const std::string& spec);
  // The device gradient compressors the engine made, by spec (device collectives with a policy).
  DeviceGradCompressor& device_grad_compressor(const std::string& spec);

  // Checkpoints: the state of every gradient compressor the engine made, host and device
  // (error-feedback residuals, PowerSGD's Q, step counters), as one checksummed blob, so that a
  // resumed run continues with the same bits. Call it between steps, with no call of the engine
  // in flight.
  std::vector<std::byte> save_state() const;
  // Replaces those states by a saved blob's, making the compressors it names. Device
  // compressors load onto `device`'s backend and stream (default: CUDA). Compressors the blob
  // does not name keep their state. Throws CorruptStream for a malformed blob and
  // InvalidArgument for a compressor spec this build does not take; nothing is loaded then.
  void load_state(std::span<const std::byte> blob);
  void load_state(std::span<const std::byte> blob, const DeviceCollectiveOptions& device);

 private:
  // What the library's own calls do with an engine (policy/engine_calls.h): record calls and
  // errors, sample, log decisions, key gradient buffers, guard the compressors.
  friend struct policy::EngineCalls;
  void record(const Communicator& comm, Operation op, const PolicyDecision& decision,
              const CollectiveStats& call);
  void record_error(const Communicator& comm, Operation op, double max_abs_error);
  // True when this compressed call is to be compared with an uncompressed one.
  bool sample_error(const Communicator& comm, Operation op);
  void log_decision(const Communicator& comm, Operation op, size_t bytes,
                    const PolicyDecision& decision);
  // The key of a gradient compressor's state for a buffer the caller gave no key for in a call
  // `op` on `comm`: made of its address and element count, the call's dimension and `op`
  // (policy_calls.h's buffer_key), after the states of earlier buffers that overlap this one's
  // `bytes` but are not it (or were another kind of call's) are dropped from every compressor
  // (the memory holds another tensor now: policy/buffer_keys.h), unless their steps are running.
  uint64_t buffer_grad_key(const void* data, size_t count, size_t bytes, const Communicator& comm,
                           Operation op);
  // Drops the states of `keys` from every compressor (unless their steps are running); returns
  // how many were dropped.
  uint64_t drop_grad_states(std::span<const uint64_t> keys);
  // Drops every state buffer_grad_key keyed and forgets those buffers (a caller that keys its
  // calls itself from now on).
  uint64_t drop_buffer_states();
  // Gradient compressor steps on the host share it (they may run on several threads at once,
  // grad/engine.h); loading compressor states and device compressor steps take it alone.
  std::shared_mutex& grad_mutex() { return *grad_mutex_; }

  Policy policy_;
  EngineOptions options_;
  std::unique_ptr<std::mutex> mutex_;              // stats_, compressors_, counters
  std::unique_ptr<std::shared_mutex> grad_mutex_;  // gradient compressor calls
  std::unique_ptr<policy::BufferKeys> buffer_keys_;
  uint64_t dropped_states_ = 0;  // under mutex_
  CommStats stats_;
  std::map<std::string, std::unique_ptr<GradCompressor>> compressors_;
  std::map<std::string, std::unique_ptr<DeviceGradCompressor>> device_compressors_;
  std::map<std::pair<Dimension, Operation>, uint64_t> compressed_calls_;
  std::set<std::string> explained_;  // decisions already explained (HYCC_LOG=decisions)
  std::set<std::string> warned_;     // warnings already given (LogOptions::warnings)

  // The warning of LogOptions::warnings, once per compressor and communicator size.
  void warn_if_costlier_than_ring(const Communicator& comm, Operation op,
                                  const PolicyDecision& decision, const CollectiveStats& call);
};

}  // namespace hycc
