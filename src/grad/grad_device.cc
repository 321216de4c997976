// DeviceGradCompressor (hycc/grad_device.h): the specs, the argument checks, the state of each
// key, save and load. The steps: grad_ef_device.cc, grad_powersgd_device.cc, grad_sign_device.cc,
// grad_topk_device.cc.
#include <mutex>
#include <utility>
#include <vector>

#include "comm/device_call_check.h"
#include "common/xxh3.h"
#include "grad/grad_device_state.h"
#include "grad/low_rank_plan.h"
#include "grad/state.h"

namespace hycc {

DeviceGradCompressor::DeviceGradCompressor(std::string_view spec)
    : parsed_(std::make_unique<grad::GradSpec>(grad::parse_grad_spec(spec))) {
  spec_ = parsed_->canonical;
}

DeviceGradCompressor::~DeviceGradCompressor() = default;
DeviceGradCompressor::DeviceGradCompressor(DeviceGradCompressor&&) noexcept = default;
DeviceGradCompressor& DeviceGradCompressor::operator=(DeviceGradCompressor&&) noexcept = default;

namespace grad {

Memory device_zeros(DeviceOps& ops, size_t count) {
  Memory m = ops.allocate(count * sizeof(float));
  ops.zero(m.data(), count * sizeof(float));
  return m;
}

void accumulate_gradient(const DeviceStep& s, bool error_feedback, GradState& state, float* acc) {
  const size_t n = s.grad.count;
  if (error_feedback && state.residual_count != n) {
    state.residual = device_zeros(s.ops, n);
    state.residual_count = n;
  }
  // The bytes of grad are a payload of codec "none", added to the residual or to zeros.
  const Memory zeros = error_feedback ? Memory() : device_zeros(s.ops, n);
  const void* own = error_feedback ? state.residual.data() : zeros.data();
  s.ops.decode_accumulate(CodecConfig{}, s.grad.data, s.grad.bytes(), s.grad.dtype,
                          {DType::kF32, n, own}, acc);
  if (!error_feedback) s.ops.synchronize();  // before `zeros` goes
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace grad

GradStepStats DeviceGradCompressor::reduce_scatter(const Communicator& comm,
                                                   const GradTensor& tensor, ConstTensorView grad,
                                                   TensorView shard, ReduceOp op,
                                                   const DeviceCollectiveOptions& options) {
  const ChunkRange mine = chunk_range(grad.count, comm.size(), comm.rank());
  if (shard.dtype != grad.dtype || shard.count != mine.count) {
    throw InvalidArgument(tagged("grad:device", "reduce_scatter: shard holds ", shard.count, " ",
                                 dtype_name(shard.dtype), " elements, this rank's chunk is ",
                                 mine.count, " ", dtype_name(grad.dtype)));
  }
  if (grad::scatters_to_owners(parsed_->kind)) {
    return run(comm, tensor, grad, shard, op, options, true);
  }
  const std::unique_ptr<device::DeviceOps> ops = device::make_ops(options);
  const device::Memory whole = ops->allocate(grad.bytes());
  const GradStepStats stats =
      allreduce(comm, tensor, grad, {grad.dtype, grad.count, whole.data()}, op, options);
  ops->copy_device(
      shard.data,
      static_cast<const std::byte*>(whole.data()) + mine.offset * dtype_size(grad.dtype),
      shard.bytes());
  ops->synchronize();
  return stats;
}

void DeviceGradCompressor::reset() {
  const std::lock_guard<std::mutex> lock(*mutex_);
  states_.clear();
}

void DeviceGradCompressor::reset(uint64_t key) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  states_.erase(key);
}

bool DeviceGradCompressor::drop_if_idle(uint64_t key) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return in_use_.count(key) == 0 && states_.erase(key) != 0;
}

size_t DeviceGradCompressor::tensors() const {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return states_.size();
}

size_t DeviceGradCompressor::state_bytes() const {
  const std::lock_guard<std::mutex> lock(*mutex_);
  size_t bytes = 0;
  for (const auto& [key, s] : states_) bytes += (s->residual_count + s->aux_count) * sizeof(float);
  return bytes;
}

namespace {

// `count` floats of device memory, copied to the host.
std::vector<float> to_host(const grad::GradState& s, const device::Memory& m, size_t count) {
  DeviceCollectiveOptions o;
  o.backend = s.backend;
  o.stream = s.stream;
  const std::unique_ptr<device::DeviceOps> ops = device::make_ops(o);
  std::vector<float> v(count);
  ops->copy_to_host(v.data(), m.data(), count * sizeof(float));
  ops->synchronize();
  return v;
}

// `values` in new device memory.
device::Memory to_device(device::DeviceOps& ops, const std::vector<float>& values) {
  device::Memory m = ops.allocate(values.size() * sizeof(float));
  ops.copy_to_device(m.data(), values.data(), values.size() * sizeof(float));
  return m;
}

// grad/method.h's restart_nonfinite on the device state: residuals (worker and server) from
// zero where they are not finite; PowerSGD's Q, if any of it is not, drawn again on the next step.
// Only PowerSGD's needs the host to learn whether there were any (it waits); the others queue.
void restart_nonfinite(device::DeviceOps& ops, grad::Kind kind, grad::GradState& state) {
  ops.clear_nonfinite(static_cast<float*>(state.residual.data()), state.residual_count);
  if (state.aux_count == 0) return;
  if (kind != grad::Kind::kPowerSgd) {
    ops.clear_nonfinite(static_cast<float*>(state.aux.data()), state.aux_count);
  } else if (ops.zero_nonfinite(static_cast<float*>(state.aux.data()), state.aux_count)) {
    state.aux_count = 0;
  }
}

// "none": a plain uncompressed allreduce, or reduce-scatter (shard_only; out is this rank's
// chunk); its state only counts the steps, as the host's.
GradStepStats plain_step(const grad::DeviceStep& step) {
  GradStepStats stats;
  stats.elements = step.grad.count;
  CollectiveStats c;
  DeviceCollectiveOptions o = step.options;
  o.stats = &c;
  if (step.shard_only) {
    reduce_scatter_device(step.comm, step.grad, step.out, step.op, o);
  } else {
    allreduce_device(step.comm, step.grad, step.out, step.op, o);
  }
  stats.payload_bytes = step.grad.bytes();
  stats.wire_bytes = c.wire_bytes;
  stats.comm_seconds = c.seconds;
  return stats;
}

}  // namespace

std::vector<std::byte> DeviceGradCompressor::save() const {
  grad::StateTable table;
  const std::lock_guard<std::mutex> lock(*mutex_);
  for (const auto& [key, state] : states_) {
    grad::TensorState& t = table[key];
    t.steps = state->steps;
    t.rank = state->rank;
    t.size = state->size;
    t.count = state->count;
    t.residual = to_host(*state, state->residual, state->residual_count);
    t.aux = to_host(*state, state->aux, state->aux_count);
  }
  return grad::serialize_state(spec_, table);
}

void DeviceGradCompressor::load(std::span<const std::byte> blob,
                                const DeviceCollectiveOptions& options) {
  const grad::StateTable table = grad::deserialize_state(spec_, blob);
  const std::unique_ptr<device::DeviceOps> ops = device::make_ops(options);
  std::map<uint64_t, std::unique_ptr<grad::GradState>> loaded;
  const bool ef = grad::wraps_codec(parsed_->kind);
  for (const auto& [key, t] : table) {
    if (!t.residual.empty() && t.residual.size() != t.count) {
      throw CorruptStream(tagged("grad:device", "the saved residual of key ", key, " has ",
                                 t.residual.size(), " values for ", t.count, " elements"));
    }
    auto s = std::make_unique<grad::GradState>();
    s->backend = options.backend;
    s->stream = options.stream;
    s->steps = t.steps;
    s->rank = t.rank;
    s->size = t.size;
    s->count = t.count;
    // ef+CODEC and ef2+CODEC keep a residual from their first step on (zeros if the blob has
    // none).
    s->residual =
        ef && t.residual.empty() ? grad::device_zeros(*ops, t.count) : to_device(*ops, t.residual);
    s->residual_count = ef ? t.count : t.residual.size();
    s->aux = to_device(*ops, t.aux);
    s->aux_count = t.aux.size();
    loaded[key] = std::move(s);
  }
  ops->synchronize();
  const std::lock_guard<std::mutex> lock(*mutex_);
  states_ = std::move(loaded);
}

std::vector<float> DeviceGradCompressor::residual(uint64_t key) const {
  const std::lock_guard<std::mutex> lock(*mutex_);
  const auto it = states_.find(key);
  if (it == states_.end()) return {};
  return to_host(*it->second, it->second->residual, it->second->residual_count);
}

GradStepStats DeviceGradCompressor::allreduce(const Communicator& comm, const GradTensor& tensor,
                                              ConstTensorView grad, TensorView out, ReduceOp op,
                                              const DeviceCollectiveOptions& options) {
  return run(comm, tensor, grad, out, op, options, false);
}

GradStepStats DeviceGradCompressor::run(const Communicator& comm, const GradTensor& tensor,
                                        ConstTensorView grad, TensorView out, ReduceOp op,
                                        const DeviceCollectiveOptions& options, bool shard_only) {
  DeviceCollectiveOptions plain = options;  // for the collectives of a step
  plain.policy = nullptr;
  plain.codec = CodecConfig{};
  plain.stats = nullptr;
  plain.max_error = nullptr;
  const uint64_t key = tensor.key;
  const Operation kind = shard_only ? Operation::kReduceScatter : Operation::kAllreduce;
  const char* name =
      shard_only ? "DeviceGradCompressor::reduce_scatter" : "DeviceGradCompressor::allreduce";
  comm::ArgCheck check(kind);
  std::exception_ptr unavailable;
  const std::unique_ptr<device::DeviceOps> ops = comm::try_make_ops(check, options, unavailable);
  comm::check_pair(check, ops.get(), name, grad, out);
  // A shard (checked by reduce_scatter) is written after grad is read: it may lie anywhere.
  if (!shard_only) comm::check_same_count_or_buffer(check, name, grad, out);
  comm::check_reduce_op(check, op);
  comm::check_device_options(check, comm, kind, plain);
  if (check.ok()) {
    const std::string layout = grad::layout_error(tensor, grad.count);
    if (!layout.empty()) check.fail(tagged("grad:device", layout));
  }
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    const auto found = states_.find(key);
    if (found != states_.end() &&
        (found->second->count != grad.count || found->second->size != comm.size() ||
         found->second->rank != comm.rank())) {
      const grad::GradState& s = *found->second;
      check.fail(tagged("grad:device", "the state of key ", key, " belongs to ", s.count,
                        " elements on rank ", s.rank, " of ", s.size, ", not ", grad.count,
                        " elements on rank ", comm.rank(), " of ", comm.size(),
                        "; reset() it first"));
    }
  }
  comm::add_device_fields(check, grad.count, grad.dtype, plain);
  // Not the key: it names this rank's state, and the policy collectives make it from the
  // buffer's address when the caller gives none (different on every rank).
  check.field("layout hash", grad::layout_hash(tensor));
  check.field("spec hash", static_cast<int64_t>(xxh3(spec_.data(), spec_.size())));
  // Stream-ordered: agreed once per signature, as the device collectives (device_call_check.h).
  const bool agree = comm::needs_agreement(check, comm, options);
  comm::settle(check, comm, unavailable, agree);
  if (agree) comm::agreed(check, comm, options);

  // The table is locked to find or make the state, not for the step: steps of other keys on
  // other communicators run meanwhile (a lock over the step would deadlock two threads whose
  // ranks took it in opposite orders, as it did on the host).
  grad::GradState* found_or_made = nullptr;
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    std::unique_ptr<grad::GradState>& slot = states_[key];
    if (!slot) {
      slot = std::make_unique<grad::GradState>();
      slot->backend = options.backend;
      slot->stream = options.stream;
      slot->count = grad.count;
      slot->rank = comm.rank();
      slot->size = comm.size();
      if (grad::wraps_codec(parsed_->kind)) {
        slot->residual = grad::device_zeros(*ops, grad.count);
        slot->residual_count = grad.count;
      }
    }
    found_or_made = slot.get();
    in_use_[key] += 1;
  }
  struct InUse {  // until the step ends, drop_if_idle() leaves the state alone
    DeviceGradCompressor& c;
    uint64_t key;
    ~InUse() {
      const std::lock_guard<std::mutex> lock(*c.mutex_);
      const auto it = c.in_use_.find(key);
      if (--it->second == 0) c.in_use_.erase(it);
    }
  } in_use{*this, key};
  grad::GradState& state = *found_or_made;
  GradStepStats stats;
  stats.elements = grad.count;
  if (grad.count != 0) {
    // The step's own collectives skip their agreements: their arguments follow from what the
    // ranks just agreed on (and from sizes the steps agree on themselves), as the host
    // compressors' exchanges, which go to MPI, have none.
    plain.check_arguments = ArgumentCheck::kNever;
    const std::unique_ptr<grad::DeviceKernels> kernels = grad::make_device_kernels(plain, *ops);
    const grad::DeviceStep step{comm, *ops, *kernels, plain, tensor, grad, out, op, shard_only};
    try {
      switch (parsed_->kind) {
        case grad::Kind::kNone:
          stats = plain_step(step);
          break;
        case grad::Kind::kErrorFeedback:
          stats = grad::ef_device_step(step, parsed_->codec, state);
          break;
        case grad::Kind::kPowerSgd:
          stats = grad::powersgd_device_step(step, *parsed_, state);
          break;
        case grad::Kind::kTopK:
          stats = grad::topk_device_step(step, *parsed_, state);
          break;
        case grad::Kind::kTwoStageErrorFeedback:
          stats = grad::ef2_device_step(step, parsed_->codec, state);
          break;
        case grad::Kind::kSign:
          stats = grad::sign_device_step(step, parsed_->error_feedback, state);
      }
      restart_nonfinite(*ops, parsed_->kind, state);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(*mutex_);
      states_.erase(key);  // a half-updated state must not be used again
      throw;
    }
  }
  state.steps += 1;
  return stats;
}

}  // namespace hycc
