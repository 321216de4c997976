// The policy path of every collective: one PolicyCall decides the compressor, runs the call with
// the decided options (or a gradient compressor), optionally runs it uncompressed too to sample
// the error, and records the call in the engine's statistics.
#include "policy/policy_calls.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "codec/float_io.h"
#include "coll/entry.h"
#include "grad/low_rank_plan.h"
#include "hycc/error.h"
#include "hycc/grad.h"
#include "hycc/policy_engine.h"
#include "policy/engine_calls.h"

namespace hycc::policy {
namespace {

// A buffer shaped like `like`, for the uncompressed reference of a sampled call.
struct Scratch {
  std::vector<std::byte> bytes;
  TensorView view;
  explicit Scratch(ConstTensorView like)
      : bytes(like.bytes()), view{like.dtype, like.count, bytes.data()} {}
};

class PolicyCall {
 public:
  PolicyCall(const Communicator& comm, Operation op, ConstTensorView message,
             const CollectiveOptions& caller)
      : engine_(*caller.policy),
        comm_(comm),
        op_(op),
        caller_(caller),
        decision_(caller.decision != nullptr
                      ? engine_.choose(comm, op, message.bytes(), message.dtype, *caller.decision)
                      : engine_.choose(comm, op, message.bytes(), message.dtype)),
        start_(std::chrono::steady_clock::now()) {
    const size_t bytes = message.bytes();
    policy::EngineCalls::log_decision(engine_, comm, op, bytes, decision_);
    inner_ = caller;  // the algorithm's options: the call's identity stays here
    inner_.codec = decision_.gradient ? decision_.gradient_codec : decision_.options.codec;
    inner_.threshold_bytes = decision_.threshold_bytes;
    inner_.stats = &stats_;
    compresses_ = comm.size() > 1 && bytes > 0 && bytes >= inner_.threshold_bytes &&
                  inner_.algorithm != Algorithm::kNative &&
                  (decision_.gradient || inner_.codec.id() != CodecId::kNone);
    // A receiver cannot know the uncompressed message: point to point is never sampled.
    sampled_ = compresses_ && op != Operation::kSendRecv &&
               policy::EngineCalls::sample_error(engine_, comm, op);
  }

  const AlgorithmOptions& options() const { return inner_; }
  // A gradient compressor runs (instead of the codec) when the policy chose one, the call is
  // above the threshold and `applicable` (a sum or average reduction it can run).
  bool gradient(bool applicable) const { return compresses_ && decision_.gradient && applicable; }
  bool sampled() const { return sampled_; }

  // The uncompressed result of the call, into `ref` (before the call itself runs).
  void reference(ConstTensorView like,
                 const std::function<void(TensorView, AlgorithmOptions&)>& run) {
    if (!sampled_) return;
    scratch_.emplace_back(like);
    AlgorithmOptions native;
    native.algorithm = Algorithm::kNative;
    native.tag = caller_.tag;
    native.check_arguments = caller_.check_arguments;
    run(scratch_.back().view, native);
    start_ = std::chrono::steady_clock::now();  // the call's time excludes its reference
  }

  GradCompressor& compressor() { return engine_.grad_compressor(decision_.compressor); }
  std::shared_mutex& grad_mutex() { return policy::EngineCalls::grad_mutex(engine_); }
  void gradient_ran(const GradStepStats& g, size_t message_bytes) {
    stats_ = CollectiveStats{};
    stats_.compressed = g.compressed;
    stats_.message_bytes = message_bytes;
    stats_.wire_bytes = g.wire_bytes;
    // Raw bytes of what was sent: the wire bytes scaled by the gradient's compression ratio.
    stats_.raw_bytes =
        g.compressed && g.payload_bytes > 0
            ? size_t(double(g.wire_bytes) * double(message_bytes) / double(g.payload_bytes))
            : g.wire_bytes;
    stats_.codec_seconds = g.compress_seconds;
  }

  // Records the call (stats_ holds what the collective or gradient_ran() reported); `result` is
  // compared with the reference of a sampled call.
  void finish(ConstTensorView result) {
    stats_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (caller_.stats != nullptr) *caller_.stats = stats_;
    policy::EngineCalls::record(engine_, comm_, op_, decision_, stats_);
    if (sampled_ && !scratch_.empty()) {
      policy::EngineCalls::record_error(engine_, comm_, op_,
                                        codec::max_abs_difference(result, scratch_.back().view));
    }
  }

 private:
  PolicyEngine& engine_;
  const Communicator& comm_;
  Operation op_;
  const CollectiveOptions& caller_;
  PolicyDecision decision_;
  AlgorithmOptions inner_;
  CollectiveStats stats_;
  std::chrono::steady_clock::time_point start_;
  bool compresses_ = false;
  bool sampled_ = false;
  std::vector<Scratch> scratch_;
};

bool same_shape(ConstTensorView a, ConstTensorView b) {
  return a.dtype == b.dtype && a.count == b.count;
}

}  // namespace

GradTensor policy_grad_layout(uint64_t key, std::span<const std::vector<size_t>> pieces) {
  GradTensor t(key);
  t.pieces.assign(pieces.begin(), pieces.end());
  return t;
}

GradTensor policy_grad_tensor(PolicyEngine& engine, const Communicator& comm, Operation op,
                              uint64_t key, std::span<const std::vector<size_t>> pieces,
                              const void* key_buffer, size_t key_count, ConstTensorView buffer) {
  GradTensor t = policy_grad_layout(key, pieces);
  if (key != 0) return t;
  t.key = key_buffer != nullptr
              ? policy::EngineCalls::buffer_grad_key(engine, key_buffer, key_count,
                                                     key_count * dtype_size(buffer.dtype), comm, op)
              : policy::EngineCalls::buffer_grad_key(engine, buffer.data, buffer.count,
                                                     buffer.bytes(), comm, op);
  return t;
}

void policy_allreduce(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                      const CollectiveOptions& options) {
  grad::require_layout(policy_grad_layout(options.key, options.pieces), send.count,
                       "policy:allreduce");
  PolicyCall call(comm, Operation::kAllreduce, send, options);
  call.reference(send, [&](TensorView ref, AlgorithmOptions& o) {
    coll::run_allreduce(comm, send, ref, op, o);
  });
  const bool in_place = send.data == recv.data;
  if (call.gradient(same_shape(send, recv))) {
    if (!in_place) std::memmove(recv.data, send.data, send.bytes());
    GradStepStats g;
    {
      const std::shared_lock<std::shared_mutex> lock(call.grad_mutex());
      const GradTensor tensor =
          policy_grad_tensor(*options.policy, comm, Operation::kAllreduce, options.key,
                             options.pieces, options.key_buffer, options.key_count, recv);
      g = grad_allreduce(comm, call.compressor(), tensor, recv,
                         GradOptions{op, options.tag, options.check_arguments});
    }
    call.gradient_ran(g, send.bytes());
  } else {
    coll::run_allreduce(comm, send, recv, op, call.options());
  }
  call.finish(recv);
}

void policy_reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv,
                           ReduceOp op, const CollectiveOptions& options) {
  grad::require_layout(policy_grad_layout(options.key, options.pieces), send.count,
                       "policy:reduce_scatter");
  PolicyCall call(comm, Operation::kReduceScatter, send, options);
  call.reference(recv, [&](TensorView ref, AlgorithmOptions& o) {
    coll::run_reduce_scatter(comm, send, ref, op, o);
  });
  if (call.gradient(send.dtype == recv.dtype)) {
    // grad_reduce_scatter wants send and shard apart: an in-place shard goes through a copy.
    std::vector<std::byte> shard(recv.bytes());
    const TensorView tmp{recv.dtype, recv.count, shard.data()};
    GradStepStats g;
    {
      const std::shared_lock<std::shared_mutex> lock(call.grad_mutex());
      const GradTensor tensor =
          policy_grad_tensor(*options.policy, comm, Operation::kReduceScatter, options.key,
                             options.pieces, options.key_buffer, options.key_count, send);
      g = grad_reduce_scatter(comm, call.compressor(), tensor, send, tmp,
                              GradOptions{op, options.tag, options.check_arguments});
    }
    std::memcpy(recv.data, shard.data(), shard.size());
    call.gradient_ran(g, send.bytes());
  } else {
    coll::run_reduce_scatter(comm, send, recv, op, call.options());
  }
  call.finish(recv);
}

void policy_allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
                      const CollectiveOptions& options) {
  PolicyCall call(comm, Operation::kAllgather, recv, options);
  call.reference(
      recv, [&](TensorView ref, AlgorithmOptions& o) { coll::run_allgather(comm, send, ref, o); });
  coll::run_allgather(comm, send, recv, call.options());
  call.finish(recv);
}

void policy_broadcast(const Communicator& comm, TensorView buffer, int root,
                      const CollectiveOptions& options) {
  PolicyCall call(comm, Operation::kBroadcast, buffer, options);
  call.reference(buffer, [&](TensorView ref, AlgorithmOptions& o) {
    std::memcpy(ref.data, buffer.data, buffer.bytes());
    coll::run_broadcast(comm, ref, root, o);
  });
  coll::run_broadcast(comm, buffer, root, call.options());
  call.finish(buffer);
}

void policy_alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
                     const CollectiveOptions& options) {
  PolicyCall call(comm, Operation::kAlltoall, send, options);
  call.reference(
      recv, [&](TensorView ref, AlgorithmOptions& o) { coll::run_alltoall(comm, send, ref, o); });
  coll::run_alltoall(comm, send, recv, call.options());
  call.finish(recv);
}

void policy_send(const Communicator& comm, ConstTensorView data, int dest, int tag,
                 const CollectiveOptions& options) {
  PolicyCall call(comm, Operation::kSendRecv, data, options);
  coll::run_send(comm, data, dest, tag, call.options());
  call.finish(data);
}

}  // namespace hycc::policy
