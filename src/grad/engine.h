// The Engine behind a GradCompressor: the parsed spec, the method, the per-key states, and the
// conversions between the caller's dtype and the float32 the methods work on. It runs over any
// Exchange, so the unit tests drive it with threads (thread_exchange.h) and the library with a
// Communicator (exchange.h).
//
// Steps may run on several threads at once, each for its own key on its own exchange (a program
// that reduces gradients on two communicators from two threads): each step takes a worker of
// its own (the method, which keeps scratch between steps, and a float32 copy of 16-bit
// gradients) and its key's state; the table of states and the idle workers are under a lock
// that no step holds while it communicates. reset(), save() and load() (states()) are for
// times when no step runs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "grad/exchange.h"
#include "grad/grad_spec.h"
#include "grad/method.h"
#include "grad/state.h"
#include "hycc/grad.h"

namespace hycc::grad {

class Engine {
 public:
  explicit Engine(std::string_view spec);

  const GradSpec& spec() const { return spec_; }

  // grad (in place) = op over ranks, compressed; see grad_allreduce().
  GradStepStats allreduce(Exchange& ex, const GradTensor& tensor, TensorView grad, ReduceOp op);
  // shard = this rank's chunk of op over ranks; see grad_reduce_scatter().
  GradStepStats reduce_scatter(Exchange& ex, const GradTensor& tensor, ConstTensorView grad,
                               TensorView shard, ReduceOp op);

  // One step of ef+CODEC or ef2+CODEC whose compression and exchange run elsewhere: the
  // drop-in library's nonblocking allreduce and reduce-scatter (coll/split_collectives.h, as
  // error feedback around one split collective). Checks the call as allreduce() does (throws
  // InvalidArgument), runs run(residual, seed, server, server_seed) with the key's residual
  // (count values, zeros at first) and the step's seed (step_seed(key, step, rank)), and for
  // ef2+CODEC its server residual (this rank's chunk, chunk_range(count, size, rank); empty for
  // ef+CODEC) and the seed of the server's stream (step_seed(key, step, size + rank)); run
  // replaces the residuals (the server's may be replaced later, by the two-stage allreduce's
  // second stage, while no reset() or load() runs). The step counts once run returns; if run
  // throws, the key's state is dropped.
  using FeedbackRun = std::function<void(std::span<float> residual, uint64_t seed,
                                         std::span<float> server, uint64_t server_seed)>;
  void feedback_step(const GradTensor& tensor, ConstTensorView grad, int rank, int size,
                     const FeedbackRun& run);

  // The table of states, unlocked: for tests and callers with no step running anywhere.
  StateTable& states() { return states_; }
  const StateTable& states() const { return states_; }
  // f(the table of states) under the engine's lock, for GradCompressor's reset, tensors,
  // residual, save and load: safe beside steps of other keys and drop_if_idle(). A key's state
  // is not locked during its own step, so those calls are for keys no step is running on.
  template <class F>
  auto with_states(F&& f) {
    const std::lock_guard<std::mutex> lock(*mutex_);
    return f(states_);
  }
  template <class F>
  auto with_states(F&& f) const {
    const std::lock_guard<std::mutex> lock(*mutex_);
    return f(static_cast<const StateTable&>(states_));
  }

  // Drops the state of `key` unless a step of it is running (on another thread); returns whether
  // a state was dropped. Safe beside steps of other keys (the library's own drops of states
  // whose buffers went away, policy/buffer_keys.h).
  bool drop_if_idle(uint64_t key);

  // What is wrong with a call of `what` ("grad_allreduce", "grad_reduce_scatter") on rank `rank`
  // of `size` with these arguments (shard: null for an allreduce), or empty. The calls above
  // throw it as InvalidArgument; grad_allreduce() and grad_reduce_scatter() first let every rank
  // know (comm::ArgCheck).
  std::string call_error(const char* what, const GradTensor& tensor, ConstTensorView grad,
                         const TensorView* shard, int rank, int size) const;

 private:
  struct Worker {
    std::unique_ptr<Method> method;
    std::vector<float> scratch;  // float32 copy of 16-bit gradients
  };
  class Lease;     // a worker taken for one step and given back after it
  class StateUse;  // the state of a key for one step: made empty if there is none, kept from
                   // drop_if_idle() until the step ends

  void drop_state(uint64_t key);

  // One step on float32 data (grad and out the same memory or disjoint); shard_only: see
  // StepArgs.
  GradStepStats step(Exchange& ex, Method& method, const GradTensor& tensor,
                     std::span<const float> grad, std::span<float> out, ReduceOp op,
                     bool shard_only);

  GradSpec spec_;
  // states_ as a table and idle_ (behind a pointer: engines move, as vectors of them do).
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  std::vector<std::unique_ptr<Worker>> idle_;
  StateTable states_;
  std::map<uint64_t, int> in_use_;  // running steps per key
};

// The engine of a GradCompressor, for the library's own callers (the drop-in library's
// nonblocking calls).
struct EngineAccess {
  static Engine& engine(GradCompressor& c) { return *c.engine_; }
};

}  // namespace hycc::grad
