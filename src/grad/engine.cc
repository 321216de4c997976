#include "grad/engine.h"

#include <chrono>
#include <mutex>

#include "codec/float_io.h"
#include "grad/low_rank_plan.h"
#include "hycc/error.h"

namespace hycc::grad {
namespace {

std::unique_ptr<Method> make_method(const GradSpec& spec) {
  switch (spec.kind) {
    case Kind::kNone:
      return make_none_method();
    case Kind::kErrorFeedback:
      return make_ef_method(spec);
    case Kind::kPowerSgd:
      return make_powersgd_method(spec);
    case Kind::kTopK:
      return make_topk_method(spec);
    case Kind::kSign:
      return make_sign_method(spec);
    case Kind::kTwoStageErrorFeedback:
      return make_ef2_method(spec);
  }
  throw InvalidArgument(tagged("grad", "unknown compressor kind"));
}

// What is wrong with the buffer `role` ("data", "shard") of a call of `what`, or empty.
std::string buffer_error(const char* what, const char* role, ConstTensorView v) {
  if (v.count > 0 && v.data == nullptr) {
    return tagged("grad", what, ": null ", role, " for ", v.count, " elements");
  }
  if (reinterpret_cast<uintptr_t>(v.data) % dtype_size(v.dtype) != 0) {
    return tagged("grad", what, ": ", role, " not aligned to its element size");
  }
  return {};
}

}  // namespace

std::string Engine::call_error(const char* what, const GradTensor& tensor, ConstTensorView grad,
                               const TensorView* shard, int rank, int size) const {
  if (!is_valid_dtype(static_cast<uint8_t>(grad.dtype))) {
    return tagged("grad", what, ": invalid dtype");
  }
  if (std::string error = buffer_error(what, "data", grad); !error.empty()) return error;
  const std::string layout = layout_error(tensor, grad.count);
  if (!layout.empty()) return tagged("grad", what, ": ", layout);
  if (shard != nullptr) {
    const ChunkRange mine = chunk_range(grad.count, size, rank);
    if (shard->dtype != grad.dtype || shard->count != mine.count) {
      return tagged("grad", what, ": shard holds ", shard->count, " ", dtype_name(shard->dtype),
                    " elements, this rank's chunk is ", mine.count, " ", dtype_name(grad.dtype));
    }
    if (std::string error = buffer_error(what, "shard", *shard); !error.empty()) return error;
  }
  const std::lock_guard<std::mutex> lock(*mutex_);
  const auto found = states_.find(tensor.key);
  if (found != states_.end()) {
    const TensorState& state = found->second;
    if (state.size != 0 &&
        (state.size != size || state.rank != rank || state.count != grad.count)) {
      return tagged("grad", "the state of key ", tensor.key, " belongs to ", state.count,
                    " elements on rank ", state.rank, " of ", state.size, ", not ", grad.count,
                    " elements on rank ", rank, " of ", size, "; reset() it first");
    }
  }
  return {};
}

Engine::Engine(std::string_view spec) : spec_(parse_grad_spec(spec)) {
  idle_.push_back(std::make_unique<Worker>(Worker{make_method(spec_), {}}));
}

class Engine::Lease {
 public:
  explicit Lease(Engine& e) : engine_(e) {
    {
      const std::lock_guard<std::mutex> lock(*e.mutex_);
      if (!e.idle_.empty()) {
        worker_ = std::move(e.idle_.back());
        e.idle_.pop_back();
      }
    }
    if (worker_ == nullptr) worker_ = std::make_unique<Worker>(Worker{make_method(e.spec_), {}});
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    const std::lock_guard<std::mutex> lock(*engine_.mutex_);
    engine_.idle_.push_back(std::move(worker_));
  }
  Worker& operator*() { return *worker_; }
  Worker* operator->() { return worker_.get(); }

 private:
  Engine& engine_;
  std::unique_ptr<Worker> worker_;
};

class Engine::StateUse {
 public:
  StateUse(Engine& e, uint64_t key) : engine_(e), key_(key) {
    const std::lock_guard<std::mutex> lock(*e.mutex_);
    e.in_use_[key] += 1;
    state_ = &e.states_[key];  // the reference stays valid while other keys come and go
  }
  StateUse(const StateUse&) = delete;
  StateUse& operator=(const StateUse&) = delete;
  ~StateUse() {
    const std::lock_guard<std::mutex> lock(*engine_.mutex_);
    const auto it = engine_.in_use_.find(key_);
    if (--it->second == 0) engine_.in_use_.erase(it);
  }
  TensorState& operator*() { return *state_; }

 private:
  Engine& engine_;
  uint64_t key_;
  TensorState* state_;
};

void Engine::drop_state(uint64_t key) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  states_.erase(key);
}

bool Engine::drop_if_idle(uint64_t key) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return in_use_.count(key) == 0 && states_.erase(key) != 0;
}

GradStepStats Engine::step(Exchange& ex, Method& method, const GradTensor& tensor,
                           std::span<const float> grad, std::span<float> out, ReduceOp op,
                           bool shard_only) {
  StateUse use(*this, tensor.key);
  TensorState& state = *use;
  GradStepStats stats;
  stats.elements = grad.size();
  const double comm0 = ex.seconds();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    method.step({ex, op, tensor, grad, out, shard_only}, state, stats);
    method.restart_nonfinite(state);
  } catch (...) {
    drop_state(tensor.key);  // a half-updated state must not be used again
    throw;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats.comm_seconds = ex.seconds() - comm0;
  stats.compress_seconds = total - stats.comm_seconds;
  if (ex.size() == 1) stats.wire_bytes = 0;
  state.steps += 1;
  state.rank = ex.rank();
  state.size = ex.size();
  state.count = grad.size();
  return stats;
}

void Engine::feedback_step(const GradTensor& tensor, ConstTensorView grad, int rank, int size,
                           const FeedbackRun& run) {
  if (!wraps_codec(spec_.kind)) {
    throw InvalidArgument(tagged("grad", spec_.canonical, " has no error feedback around a codec"));
  }
  const std::string error = call_error("grad_allreduce", tensor, grad, nullptr, rank, size);
  if (!error.empty()) throw InvalidArgument(error);
  StateUse use(*this, tensor.key);
  TensorState& state = *use;
  try {
    state.residual.resize(grad.count, 0.0f);
    std::span<float> server;
    if (spec_.kind == Kind::kTwoStageErrorFeedback) {
      const size_t chunk = chunk_range(grad.count, size, rank).count;
      if (state.aux.size() != chunk) state.aux.assign(chunk, 0.0f);  // as Ef2Method's step
      server = state.aux;
    }
    run(state.residual, step_seed(tensor.key, state.steps, rank), server,
        step_seed(tensor.key, state.steps, size + rank));
  } catch (...) {
    drop_state(tensor.key);  // a half-updated state must not be used again
    throw;
  }
  state.steps += 1;
  state.rank = rank;
  state.size = size;
  state.count = grad.count;
}

GradStepStats Engine::allreduce(Exchange& ex, const GradTensor& tensor, TensorView grad,
                                ReduceOp op) {
  const std::string error =
      call_error("grad_allreduce", tensor, grad, nullptr, ex.rank(), ex.size());
  if (!error.empty()) throw InvalidArgument(error);
  Lease worker(*this);
  if (grad.dtype == DType::kF32) {
    const std::span<float> data(static_cast<float*>(grad.data), grad.count);
    return step(ex, *worker->method, tensor, data, data, op, false);
  }
  std::vector<float>& scratch = worker->scratch;
  scratch.resize(grad.count);
  codec::load_as_float(grad, 0, grad.count, scratch.data());
  const GradStepStats stats = step(ex, *worker->method, tensor, scratch, scratch, op, false);
  codec::store_from_float(scratch.data(), grad.count, grad, 0);
  return stats;
}

GradStepStats Engine::reduce_scatter(Exchange& ex, const GradTensor& tensor, ConstTensorView grad,
                                     TensorView shard, ReduceOp op) {
  const std::string error =
      call_error("grad_reduce_scatter", tensor, grad, &shard, ex.rank(), ex.size());
  if (!error.empty()) throw InvalidArgument(error);
  const ChunkRange mine = chunk_range(grad.count, ex.size(), ex.rank());
  Lease worker(*this);
  std::vector<float>& scratch = worker->scratch;
  scratch.resize(grad.count);
  codec::load_as_float(grad, 0, grad.count, scratch.data());
  const GradStepStats stats = step(ex, *worker->method, tensor, scratch, scratch, op, true);
  codec::store_from_float(scratch.data() + mine.offset, mine.count, shard, 0);
  return stats;
}

}  // namespace hycc::grad
