// The interface of one gradient compression method (none, ef+codec, ef2+codec, powersgd, topk,
// sign): one
// compressed allreduce of a float32 tensor, with the method's state for that tensor. The Engine
// (engine.h) owns the states and converts dtypes; methods see float32 spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/finite.h"
#include "grad/exchange.h"
#include "grad/grad_spec.h"
#include "grad/low_rank_plan.h"
#include "grad/state.h"
#include "hycc/grad.h"

namespace hycc::grad {

struct StepArgs {
  Exchange& ex;
  ReduceOp op = ReduceOp::kAverage;
  const GradTensor& tensor;  // key and layout (shape or pieces), as the caller gave them
  // This rank's gradient and the result. They may be the same memory: a method reads all of
  // `grad` before it writes `out`.
  std::span<const float> grad;
  std::span<float> out;
  // A reduce-scatter: the caller keeps only this rank's chunk of out (chunk_range(n, p, rank)).
  // A method may send each chunk to its owner only and leave the rest of out unspecified.
  bool shard_only = false;
};

class Method {
 public:
  virtual ~Method() = default;
  // Runs one step: out = op over ranks of the (compressed) gradients, bit-identical on every
  // rank (with shard_only: this rank's chunk of it). Updates the residuals in `state` (the Engine
  // updates steps, rank, size, count) and sets payload_bytes, wire_bytes and compressed in `stats`.
  virtual void step(const StepArgs& a, TensorState& state, GradStepStats& stats) = 0;

  // After a step: a state value that is not finite (the step's gradient overflowed, as under
  // fp16 loss scaling, and its step is skipped) must not make every later step NaN. The methods
  // store residuals through finite_or_zero (common/finite.h), element by element; this is for
  // state that cannot restart so (PowerSGD's Q). Nothing by default.
  virtual void restart_nonfinite(TensorState& /*state*/) const {}
};

std::unique_ptr<Method> make_none_method();
std::unique_ptr<Method> make_ef_method(const GradSpec& spec);
std::unique_ptr<Method> make_ef2_method(const GradSpec& spec);
std::unique_ptr<Method> make_powersgd_method(const GradSpec& spec);

std::unique_ptr<Method> make_topk_method(const GradSpec& spec);
std::unique_ptr<Method> make_sign_method(const GradSpec& spec);

// ---- helpers shared by the methods ------------------------------------------------------------

// acc = residual + grad (the residual grows to grad.size() zeros on first use), returned as a
// span over the residual vector. Without error feedback, grad itself.
std::span<const float> accumulate(bool error_feedback, std::vector<float>& residual,
                                  std::span<const float> grad);

// out /= p in float32 for an average (the sum was formed in rank order).
void finish_op(std::span<float> out, ReduceOp op, int size);

// A per-(key, step, rank) seed, so that stochastic choices differ between ranks and steps but a
// resumed run repeats them.
uint64_t step_seed(uint64_t key, uint64_t step, int rank);

// Words needed for `bytes` bytes.
inline size_t words_for(size_t bytes) { return (bytes + 3) / 4; }

// Bytes one rank sends in an allgather of `bytes` per rank (to each of the p - 1 others), in a
// ring or native allreduce of `bytes` (2 (p - 1) / p of them) and in a reduce-scatter of `bytes`
// ((p - 1) / p).
inline size_t allgather_wire(size_t bytes, int p) { return bytes * static_cast<size_t>(p - 1); }
inline size_t allreduce_wire(size_t bytes, int p) {
  return p <= 1 ? 0 : 2 * (static_cast<size_t>(p) - 1) * bytes / static_cast<size_t>(p);
}
inline size_t reduce_scatter_wire(size_t bytes, int p) {
  return p <= 1 ? 0 : (static_cast<size_t>(p) - 1) * bytes / static_cast<size_t>(p);
}

}  // namespace hycc::grad
