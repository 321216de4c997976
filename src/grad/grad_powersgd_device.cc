// powersgd on device buffers: the steps of grad/method_powersgd.cc (a tensor or a bucket of
// matrices, grad/low_rank_plan.h) with the matrix products on
// the device (DeviceOps::multiply_*, the host functions' bits) and the small factors on the host:
// P (rows x r) and Q (r x cols) are copied over for their allreduces (grad::CommExchange, as the
// host method's) and P's orthogonalization (grad::orthogonalize), then copied back. The initial
// Q comes from grad::fill_normal. So every operation is the host's, in the host's order, and a
// step has the host's bits; the full tensor never leaves the device.
#include <algorithm>
#include <chrono>

#include "codec/float_io.h"
#include "grad/exchange.h"
#include "grad/grad_device_state.h"
#include "grad/low_rank.h"
#include "grad/low_rank_plan.h"
#include "grad/method.h"

namespace hycc::grad {
namespace {

// A float32 buffer of pinned host memory.
struct HostFloats {
  Memory memory;
  size_t count;
  HostFloats(DeviceOps& ops, size_t n) : memory(ops.allocate_pinned(n * sizeof(float))), count(n) {}
  float* data() const { return static_cast<float*>(memory.data()); }
  std::span<float> span() const { return {data(), count}; }
};

// A device factor copied to the host, `change`d there, and copied back.
template <typename Change>
void on_host(DeviceOps& ops, float* factor, size_t count, Change&& change) {
  const HostFloats host(ops, count);
  ops.copy_to_host(host.data(), factor, count * sizeof(float));
  ops.synchronize();
  change(host.span());
  ops.copy_to_device(factor, host.data(), count * sizeof(float));
}

// The host method's fallback for tensors it does not compress: one plain allreduce of the
// float32 values, rounded back once.
void plain_allreduce(const DeviceStep& s, grad::Exchange& ex) {
  const size_t n = s.grad.count;
  const Memory staged = s.ops.allocate_pinned(s.grad.bytes());
  s.ops.copy_to_host(staged.data(), s.grad.data, s.grad.bytes());
  s.ops.synchronize();
  const HostFloats values(s.ops, n);
  codec::load_as_float({s.grad.dtype, n, staged.data()}, 0, n, values.data());
  ex.allreduce(values.span(), s.op);
  codec::store_from_float(values.data(), n, {s.out.dtype, n, staged.data()}, 0);
  s.ops.copy_to_device(s.out.data, staged.data(), s.out.bytes());
  s.ops.synchronize();
}

template <typename Fn>
void for_compressed(const grad::LowRankPlan& plan, Fn&& fn) {
  for (const grad::LowRankPiece& c : plan.pieces) {
    if (c.shape.compresses) fn(c, c.shape);
  }
}

// The uncompressed pieces of grad, widened to float32 (exactly, as the host method reads them)
// into plain[0, plan.plain_total); `also` queues more copies to the host before the wait.
template <typename Also>
void gather_plain(const DeviceStep& s, const grad::LowRankPlan& plan, float* plain, Also&& also) {
  const size_t size = dtype_size(s.grad.dtype);
  const Memory staged = s.ops.allocate_pinned(std::max<size_t>(plan.plain_total * size, 1));
  auto* bytes = static_cast<std::byte*>(staged.data());
  for (const grad::LowRankPiece& c : plan.pieces) {
    if (c.shape.compresses) continue;
    s.ops.copy_to_host(bytes + c.plain_offset * size,
                       static_cast<const std::byte*>(s.grad.data) + c.offset * size,
                       c.count * size);
  }
  also();
  s.ops.synchronize();
  codec::load_as_float({s.grad.dtype, plan.plain_total, bytes}, 0, plan.plain_total, plain);
}

}  // namespace

GradStepStats powersgd_device_step(const DeviceStep& s, const grad::GradSpec& spec,
                                   GradState& state) {
  const auto t0 = std::chrono::steady_clock::now();
  GradStepStats stats;
  stats.elements = s.grad.count;
  DeviceOps& ops = s.ops;
  const size_t n = s.grad.count;
  const int p = s.comm.size();
  grad::CommExchange ex(s.comm, s.options.tag);
  const grad::LowRankPlan plan = grad::low_rank_plan(spec, s.tensor, n);
  if (!plan.compresses() || state.steps < spec.start) {
    plain_allreduce(s, ex);
    stats.payload_bytes = n * sizeof(float);
    stats.wire_bytes = grad::allreduce_wire(stats.payload_bytes, p);
  } else {
    // M = grad + e (the residual, from the first compressed step on) or grad, as float32.
    Memory m_memory = ops.allocate(n * sizeof(float));
    auto* m = static_cast<float*>(m_memory.data());
    accumulate_gradient(s, spec.error_feedback, state, m);

    // Q: kept from the previous step (warm start), else fresh normal matrices.
    if (state.aux_count != plan.q_total || !spec.warm_start) {
      std::vector<float> q(plan.q_total);
      const uint64_t stream = spec.warm_start ? 0 : state.steps;
      for (size_t i = 0; i < plan.pieces.size(); ++i) {
        const grad::LowRankPiece& c = plan.pieces[i];
        if (!c.shape.compresses) continue;
        grad::fill_normal(std::span<float>(q).subspan(c.q_offset, c.shape.r * c.shape.cols),
                          grad::first_q_seed(spec, stream, i));
      }
      if (state.aux_count != q.size()) {
        state.aux = ops.allocate(q.size() * sizeof(float));
        state.aux_count = q.size();
      }
      ops.copy_to_device(state.aux.data(), q.data(), q.size() * sizeof(float));
    }
    auto* qt = static_cast<float*>(state.aux.data());

    const Memory p_memory = ops.allocate(plan.p_total * sizeof(float));
    auto* pm = static_cast<float*>(p_memory.data());
    for_compressed(plan, [&](const grad::LowRankPiece& c, const grad::LowRankShape& x) {
      s.kernels.multiply_mq(m + c.offset, x.rows, x.cols, qt + c.q_offset, x.r, pm + c.p_offset);
    });
    on_host(ops, pm, plan.p_total, [&](std::span<float> host) {
      ex.allreduce(host, ReduceOp::kSum);
      for_compressed(plan, [&](const grad::LowRankPiece& c, const grad::LowRankShape& x) {
        grad::orthogonalize(host.subspan(c.p_offset, x.rows * x.r), x.rows, x.r);
      });
    });
    for_compressed(plan, [&](const grad::LowRankPiece& c, const grad::LowRankShape& x) {
      s.kernels.multiply_mtp(m + c.offset, x.rows, x.cols, pm + c.p_offset, x.r, qt + c.q_offset);
    });
    // One allreduce of [Qt factors | the uncompressed pieces of grad], as the host method's.
    const HostFloats q_plain(ops, plan.q_total + plan.plain_total);
    gather_plain(s, plan, q_plain.data() + plan.q_total,
                 [&] { ops.copy_to_host(q_plain.data(), qt, plan.q_total * sizeof(float)); });
    ex.allreduce(q_plain.span(), s.op);
    ops.copy_to_device(qt, q_plain.data(), plan.q_total * sizeof(float));

    Memory out_memory = ops.allocate(n * sizeof(float));
    auto* out = static_cast<float*>(out_memory.data());
    auto* residual = static_cast<float*>(state.residual.data());
    for (const grad::LowRankPiece& c : plan.pieces) {
      const grad::LowRankShape& x = c.shape;
      if (!x.compresses) {
        ops.copy_to_device(out + c.offset, q_plain.data() + plan.q_total + c.plain_offset,
                           c.count * sizeof(float));
        if (spec.error_feedback) ops.zero(residual + c.offset, c.count * sizeof(float));
        continue;
      }
      s.kernels.multiply_pqt(pm + c.p_offset, qt + c.q_offset, x.rows, x.cols, x.r, out + c.offset);
      if (!spec.error_feedback) continue;
      // e = M - the average approximation: out / p for a sum (one float32 division, as the
      // host's), out itself for an average.
      float* e = residual + c.offset;
      if (s.op == ReduceOp::kSum) {
        ops.round_into(out + c.offset, ReduceOp::kAverage, p, {DType::kF32, c.count, e});
        ops.subtract(m + c.offset, e, e, c.count);
      } else {
        ops.subtract(m + c.offset, out + c.offset, e, c.count);
      }
    }
    ops.round_into(out, ReduceOp::kSum, 1, s.out);
    ops.synchronize();
    stats.payload_bytes = (plan.p_total + plan.q_total + plan.plain_total) * sizeof(float);
    stats.wire_bytes = grad::allreduce_wire(plan.p_total * sizeof(float), p) +
                       grad::allreduce_wire((plan.q_total + plan.plain_total) * sizeof(float), p);
    stats.compressed = true;
  }
  if (p == 1) stats.wire_bytes = 0;
  stats.comm_seconds = ex.seconds();
  stats.compress_seconds = seconds_since(t0) - stats.comm_seconds;
  return stats;
}

}  // namespace hycc::grad
