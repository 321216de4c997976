// powersgd: rank-r approximation P Q^T of the gradient viewed as a matrix (Vogels et al., 2019).
//
// The tensor is a rows x cols matrix, rows = shape[0], cols = the product of the other
// dimensions. With M = grad + e (or grad without error feedback) and Q from the previous step
// (warm start; a fixed-seed normal matrix on the first step, or on every step without it):
//   P = M Q;  allreduce(P, sum);  orthonormalize P;  Q = M^T P;  allreduce(Q, op);
//   out = P Q^T;  e = M - P Q_avg^T (the average approximation, as torch's PowerSGD hook).
// P and Q travel through plain (codec none) allreduces, which every rank ends with the same bits
// of, so every rank computes the same out. 1-D tensors, and tensors where rows x cols is less
// than min_compression x r (rows + cols), go through one plain allreduce instead.
#include <algorithm>
#include <functional>
#include <numeric>

#include "grad/low_rank.h"
#include "grad/method.h"

namespace hycc::grad {
namespace {

class PowerSgdMethod : public Method {
 public:
  explicit PowerSgdMethod(const GradSpec& spec) : spec_(spec) {}

  void step(const StepArgs& a, TensorState& state, GradStepStats& stats) override {
    const size_t n = a.grad.size();
    const int p = a.ex.size();
    const auto [rows, cols, r, compresses] = low_rank_shape(spec_, a.shape, n);
    if (!compresses) {
      if (a.out.data() != a.grad.data()) std::copy(a.grad.begin(), a.grad.end(), a.out.begin());
      a.ex.allreduce(a.out, a.op);
      stats.payload_bytes = n * sizeof(float);
      stats.wire_bytes = allreduce_wire(stats.payload_bytes, p);
      stats.compressed = false;
      return;
    }
    const std::span<const float> m = accumulate(spec_.error_feedback, state.residual, a.grad);
    std::vector<float>& qt = state.aux;  // r x cols, identical on every rank
    if (qt.size() != r * cols || !spec_.warm_start) {
      qt.resize(r * cols);
      const uint64_t stream = spec_.warm_start ? 0 : state.steps;
      fill_normal(qt, step_seed(a.key ^ spec_.seed, stream, 0));
    }
    p_.resize(rows * r);
    multiply_mq(m, rows, cols, qt, r, p_);
    a.ex.allreduce(p_, ReduceOp::kSum);
    orthogonalize(p_, rows, r);
    multiply_mtp(m, rows, cols, p_, r, qt);
    a.ex.allreduce(qt, a.op);
    multiply_pqt(p_, qt, rows, cols, r, a.out);  // m is read for the last time above, or below
    if (spec_.error_feedback) {
      // e = M - average approximation; M lives in the residual.
      const float scale = a.op == ReduceOp::kSum ? static_cast<float>(p) : 1.0f;
      for (size_t i = 0; i < n; ++i) state.residual[i] -= a.out[i] / scale;
    }
    stats.payload_bytes = (rows + cols) * r * sizeof(float);
    stats.wire_bytes =
        allreduce_wire(rows * r * sizeof(float), p) + allreduce_wire(cols * r * sizeof(float), p);
    stats.compressed = true;
  }

 private:
  GradSpec spec_;
  std::vector<float> p_;
};

}  // namespace

LowRankShape low_rank_shape(const GradSpec& spec, const std::vector<size_t>& shape, size_t n) {
  LowRankShape s;
  s.rows = shape.size() >= 2 ? shape[0] : 0;
  s.cols = s.rows > 0 ? n / s.rows : 0;
  s.r = std::min({static_cast<size_t>(spec.rank), s.rows, s.cols});
  s.compresses = s.rows > 0 && s.r > 0 &&
                 static_cast<double>(s.rows) * double(s.cols) >=
                     spec.min_compression * double(s.r) * double(s.rows + s.cols);
  return s;
}

std::unique_ptr<Method> make_powersgd_method(const GradSpec& spec) {
  return std::make_unique<PowerSgdMethod>(spec);
}

}  // namespace hycc::grad
