// powersgd: rank-r approximation P Q^T of the gradient viewed as a matrix (Vogels et al., 2019).
//
// The tensor is a rows x cols matrix, rows = shape[0], cols = the product of the other
// dimensions, or a bucket of such matrices (GradTensor::pieces; low_rank_plan.h). With M = grad
// + e (or grad without error feedback) and Q from the previous step (warm start; a fixed-seed
// normal matrix on the first step, or on every step without it), for every compressed matrix:
//   P = M Q;  allreduce(P, sum);  orthonormalize P;  Q = M^T P;  allreduce(Q, op);
//   out = P Q^T;  e = M - P Q_avg^T (the average approximation, as torch's PowerSGD hook).
// The P factors of all matrices travel in one allreduce, their Q factors in another together
// with the pieces left uncompressed (vectors; matrices where rows x cols is less than
// min_compression x r (rows + cols)), whose residual stays 0. The allreduces are plain (codec
// none): every rank ends with the same bits of them, so every rank computes the same out. A
// tensor with no compressed matrix, and the first `start` steps of every tensor, go through one
// plain allreduce.
#include <algorithm>
#include <cmath>

#include "grad/low_rank.h"
#include "grad/method.h"

namespace hycc::grad {
namespace {

class PowerSgdMethod : public Method {
 public:
  explicit PowerSgdMethod(const GradSpec& spec) : spec_(spec) {}

  // Q (aux) is the warm start: one value that is not finite spreads through every product,
  // so a Q that holds one is dropped, and the next step starts Q afresh as the first did.
  void restart_nonfinite(TensorState& state) const override {
    if (!std::all_of(state.aux.begin(), state.aux.end(),
                     [](float x) { return std::isfinite(x); })) {
      state.aux.clear();
    }
  }

  void step(const StepArgs& a, TensorState& state, GradStepStats& stats) override {
    const size_t n = a.grad.size();
    const int p = a.ex.size();
    const LowRankPlan plan = low_rank_plan(spec_, a.tensor, n);
    if (!plan.compresses() || state.steps < spec_.start) {
      if (a.out.data() != a.grad.data()) std::copy(a.grad.begin(), a.grad.end(), a.out.begin());
      a.ex.allreduce(a.out, a.op);
      stats.payload_bytes = n * sizeof(float);
      stats.wire_bytes = allreduce_wire(stats.payload_bytes, p);
      stats.compressed = false;
      return;
    }
    // Q factors and plain values share one allreduce: [Qt of every matrix | plain pieces].
    q_plain_.resize(plan.q_total + plan.plain_total);
    const std::span<float> plain(q_plain_.data() + plan.q_total, plan.plain_total);
    for (const LowRankPiece& piece : plan.pieces) {  // read before out is written
      if (!piece.shape.compresses) {
        std::copy_n(a.grad.begin() + std::ptrdiff_t(piece.offset), piece.count,
                    plain.begin() + std::ptrdiff_t(piece.plain_offset));
      }
    }
    const std::span<const float> m = accumulate(spec_.error_feedback, state.residual, a.grad);
    std::vector<float>& qt = state.aux;  // the Qt factors, identical on every rank
    if (qt.size() != plan.q_total || !spec_.warm_start) {
      qt.resize(plan.q_total);
      const uint64_t stream = spec_.warm_start ? 0 : state.steps;
      for (size_t i = 0; i < plan.pieces.size(); ++i) {
        const LowRankPiece& piece = plan.pieces[i];
        if (piece.shape.compresses) {
          fill_normal(q_of(qt, piece), first_q_seed(spec_, stream, i));
        }
      }
    }
    p_.resize(plan.p_total);
    for_compressed(plan, [&](const LowRankPiece& c, const LowRankShape& s) {
      multiply_mq(m_of(m, c), s.rows, s.cols, q_of(qt, c), s.r, p_of(c));
    });
    a.ex.allreduce(p_, ReduceOp::kSum);
    for_compressed(plan, [&](const LowRankPiece& c, const LowRankShape& s) {
      orthogonalize(p_of(c), s.rows, s.r);
      multiply_mtp(m_of(m, c), s.rows, s.cols, p_of(c), s.r, q_of(qt, c));
    });
    std::copy(qt.begin(), qt.end(), q_plain_.begin());
    a.ex.allreduce(q_plain_, a.op);
    std::copy_n(q_plain_.begin(), plan.q_total, qt.begin());
    // m is read for the last time above (it may be grad, which may be out).
    const float scale = a.op == ReduceOp::kSum ? static_cast<float>(p) : 1.0f;
    for (const LowRankPiece& piece : plan.pieces) {
      const std::span<float> out = a.out.subspan(piece.offset, piece.count);
      if (!piece.shape.compresses) {
        std::copy_n(plain.begin() + std::ptrdiff_t(piece.plain_offset), piece.count, out.begin());
        if (spec_.error_feedback) {
          std::fill_n(state.residual.begin() + std::ptrdiff_t(piece.offset), piece.count, 0.0f);
        }
        continue;
      }
      const LowRankShape& s = piece.shape;
      multiply_pqt(p_of(piece), q_of(qt, piece), s.rows, s.cols, s.r, out);
      if (spec_.error_feedback) {
        // e = M - average approximation; M lives in the residual.
        float* e = state.residual.data() + piece.offset;
        for (size_t i = 0; i < piece.count; ++i) e[i] = finite_or_zero(e[i] - out[i] / scale);
      }
    }
    stats.payload_bytes = (plan.p_total + plan.q_total + plan.plain_total) * sizeof(float);
    stats.wire_bytes = allreduce_wire(plan.p_total * sizeof(float), p) +
                       allreduce_wire((plan.q_total + plan.plain_total) * sizeof(float), p);
    stats.compressed = true;
  }

 private:
  template <typename Fn>
  static void for_compressed(const LowRankPlan& plan, Fn&& fn) {
    for (const LowRankPiece& piece : plan.pieces) {
      if (piece.shape.compresses) fn(piece, piece.shape);
    }
  }
  static std::span<const float> m_of(std::span<const float> m, const LowRankPiece& c) {
    return m.subspan(c.offset, c.count);
  }
  static std::span<float> q_of(std::vector<float>& qt, const LowRankPiece& c) {
    return {qt.data() + c.q_offset, c.shape.r * c.shape.cols};
  }
  std::span<float> p_of(const LowRankPiece& c) {
    return {p_.data() + c.p_offset, c.shape.rows * c.shape.r};
  }

  GradSpec spec_;
  std::vector<float> p_, q_plain_;
};

}  // namespace

std::unique_ptr<Method> make_powersgd_method(const GradSpec& spec) {
  return std::make_unique<PowerSgdMethod>(spec);
}

}  // namespace hycc::grad
