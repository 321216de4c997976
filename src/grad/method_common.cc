// Helpers shared by the gradient compression methods, and the method without compression.
#include <algorithm>
#include <cmath>

#include "common/synthetic_data.h"
#include "grad/method.h"

namespace hycc::grad {

std::span<const float> accumulate(bool error_feedback, std::vector<float>& residual,
                                  std::span<const float> grad) {
  if (!error_feedback) return grad;
  if (residual.size() != grad.size()) residual.assign(grad.size(), 0.0f);
  for (size_t i = 0; i < grad.size(); ++i) residual[i] += grad[i];
  return residual;
}

void finish_op(std::span<float> out, ReduceOp op, int size) {
  if (op != ReduceOp::kAverage) return;
  const float p = static_cast<float>(size);
  for (float& x : out) x /= p;
}

uint64_t step_seed(uint64_t key, uint64_t step, int rank) {
  return splitmix64(splitmix64(splitmix64(key) ^ step) ^ static_cast<uint64_t>(rank));
}

namespace {

// "none": a plain uncompressed allreduce, or reduce-scatter (shard_only).
class NoneMethod : public Method {
 public:
  void step(const StepArgs& a, TensorState&, GradStepStats& stats) override {
    if (a.out.data() != a.grad.data()) std::copy(a.grad.begin(), a.grad.end(), a.out.begin());
    stats.payload_bytes = a.out.size() * sizeof(float);
    if (a.shard_only) {
      a.ex.reduce_scatter(a.out, a.op);
      stats.wire_bytes = reduce_scatter_wire(stats.payload_bytes, a.ex.size());
    } else {
      a.ex.allreduce(a.out, a.op);
      stats.wire_bytes = allreduce_wire(stats.payload_bytes, a.ex.size());
    }
    stats.compressed = false;
  }
};

}  // namespace

std::unique_ptr<Method> make_none_method() { return std::make_unique<NoneMethod>(); }

}  // namespace hycc::grad
