// powersgd on device buffers: the steps of grad/method_powersgd.cc with the matrix products on
// the device (DeviceOps::multiply_*, the host functions' bits) and the small factors on the host:
// P (rows x r) and Q (r x cols) are copied over for their allreduces (grad::CommExchange, as the
// host method's) and P's orthogonalization (grad::orthogonalize), then copied back. The initial
// Q comes from grad::fill_normal. So every operation is the host's, in the host's order, and a
// step has the host's bits; the full tensor never leaves the device.
#include <algorithm>
#include <chrono>

#include "codec/float_io.h"
#include "coll/device/grad_device_state.h"
#include "grad/exchange.h"
#include "grad/low_rank.h"
#include "grad/method.h"

namespace hycc::coll::device {
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
  const auto [rows, cols, r, compresses] = grad::low_rank_shape(spec, s.tensor.shape, n);
  if (!compresses) {
    plain_allreduce(s, ex);
    stats.payload_bytes = n * sizeof(float);
    stats.wire_bytes = grad::allreduce_wire(stats.payload_bytes, p);
  } else {
    // M = grad + e (the residual, from the first compressed step on) or grad, as float32.
    Memory m_memory = ops.allocate(n * sizeof(float));
    auto* m = static_cast<float*>(m_memory.data());
    accumulate_gradient(s, spec.error_feedback, state, m);

    // Q: kept from the previous step (warm start), else a fresh normal matrix.
    if (state.aux_count != r * cols || !spec.warm_start) {
      std::vector<float> q(r * cols);
      const uint64_t stream = spec.warm_start ? 0 : state.steps;
      grad::fill_normal(q, grad::step_seed(s.tensor.key ^ spec.seed, stream, 0));
      if (state.aux_count != r * cols) {
        state.aux = ops.allocate(q.size() * sizeof(float));
        state.aux_count = q.size();
      }
      ops.copy_to_device(state.aux.data(), q.data(), q.size() * sizeof(float));
    }
    auto* qt = static_cast<float*>(state.aux.data());

    const Memory p_memory = ops.allocate(rows * r * sizeof(float));
    auto* pm = static_cast<float*>(p_memory.data());
    ops.multiply_mq(m, rows, cols, qt, r, pm);
    on_host(ops, pm, rows * r, [&](std::span<float> host) {
      ex.allreduce(host, ReduceOp::kSum);
      grad::orthogonalize(host, rows, r);
    });
    ops.multiply_mtp(m, rows, cols, pm, r, qt);
    on_host(ops, qt, r * cols, [&](std::span<float> host) { ex.allreduce(host, s.op); });
    Memory out_memory = ops.allocate(n * sizeof(float));
    auto* out = static_cast<float*>(out_memory.data());
    ops.multiply_pqt(pm, qt, rows, cols, r, out);
    if (spec.error_feedback) {
      // e = M - the average approximation: out / p for a sum (one float32 division, as the
      // host's), out itself for an average.
      auto* residual = static_cast<float*>(state.residual.data());
      if (s.op == ReduceOp::kSum) {
        ops.round_into(out, ReduceOp::kAverage, p, {DType::kF32, n, residual});
        ops.subtract(m, residual, residual, n);
      } else {
        ops.subtract(m, out, residual, n);
      }
    }
    ops.round_into(out, ReduceOp::kSum, 1, s.out);
    ops.synchronize();
    stats.payload_bytes = (rows + cols) * r * sizeof(float);
    stats.wire_bytes = grad::allreduce_wire(rows * r * sizeof(float), p) +
                       grad::allreduce_wire(cols * r * sizeof(float), p);
    stats.compressed = true;
  }
  if (p == 1) stats.wire_bytes = 0;
  stats.comm_seconds = ex.seconds();
  stats.compress_seconds = seconds_since(t0) - stats.comm_seconds;
  return stats;
}

}  // namespace hycc::coll::device
