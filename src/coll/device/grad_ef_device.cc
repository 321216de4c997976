// DeviceGradCompressor (hycc/grad_device.h): error feedback around a device codec, compress once,
// the payloads gathered round a device ring and summed in rank order, as grad/method_ef.cc does
// on the host (same seeds, same float32 operations in the same order, so the same bits). The
// other specs run the host compressor on staged copies (grad_staged_device.cc).
#include "hycc/grad_device.h"

#include <chrono>
#include <utility>
#include <vector>

#include "coll/device/device_entry.h"
#include "coll/device/device_ring.h"
#include "common/checksum.h"
#include "grad/grad_spec.h"
#include "grad/method.h"
#include "grad/state.h"

namespace hycc {

namespace dev = coll::device;

struct DeviceGradCompressor::State {
  DeviceBackend backend = DeviceBackend::kCuda;
  DeviceStream stream = nullptr;
  dev::Memory residual;  // count float32
  size_t count = 0;
  int rank = 0, size = 0;
  uint64_t steps = 0;
};

namespace {

// Gathers every rank's payload round the ring: all[j] = rank j's payload (all[me] = own, moved).
void gather_payloads(dev::DeviceContext& ctx, dev::Payload&& own, size_t bound, size_t raw,
                     std::vector<dev::Payload>& all) {
  const int p = ctx.size, me = ctx.rank;
  all.resize(static_cast<size_t>(p));
  dev::DeviceRingSchedule ring;
  ring.steps = p - 1;
  ring.first_segments = 1;
  ring.recv_segments = [](int) { return size_t{1}; };
  ring.recv_capacity = [&](int, size_t) { return bound; };
  ring.max_payload = bound;
  const auto copy = [&](const dev::Payload& from, dev::Payload& to) {
    ctx.ops.copy_device(to.data(), from.data(), from.size);
    to.size = from.size;
    to.raw_bytes = raw;
    to.checksum = from.checksum;  // forwarded as received
    to.has_checksum = from.has_checksum;
  };
  ring.first = [&](size_t, dev::Payload& out) { copy(own, out); };
  ring.arrived = [&](int t, size_t, dev::Payload& in, dev::Payload& out) {
    dev::Payload& slot = all[static_cast<size_t>((me - 1 - t + 2 * p) % p)];
    std::swap(in, slot);
    if (t + 1 < ring.steps) copy(slot, out);
  };
  if (p > 1) dev::run_device_ring(ctx, ring);
  all[static_cast<size_t>(me)] = std::move(own);
}

}  // namespace

DeviceGradCompressor::DeviceGradCompressor(std::string_view spec) {
  const grad::GradSpec parsed = grad::parse_grad_spec(spec);
  spec_ = parsed.canonical;
  if (!runs_on_device(spec_)) {
    host_ = std::make_unique<GradCompressor>(spec_);
    return;
  }
  error_feedback_ = parsed.kind == grad::Kind::kErrorFeedback;
  if (error_feedback_) codec_ = parsed.codec;
}

DeviceGradCompressor::~DeviceGradCompressor() = default;
DeviceGradCompressor::DeviceGradCompressor(DeviceGradCompressor&&) noexcept = default;
DeviceGradCompressor& DeviceGradCompressor::operator=(DeviceGradCompressor&&) noexcept = default;

bool DeviceGradCompressor::runs_on_device(std::string_view spec) {
  try {
    const grad::Kind kind = grad::parse_grad_spec(spec).kind;
    return kind == grad::Kind::kNone || kind == grad::Kind::kErrorFeedback;
  } catch (const InvalidArgument&) {
    return false;
  }
}

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
  const std::unique_ptr<dev::DeviceOps> ops = dev::make_ops(options);
  const dev::Memory whole = ops->allocate(grad.bytes());
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
  states_.clear();
  if (host_) host_->reset();
}
void DeviceGradCompressor::reset(uint64_t key) {
  states_.erase(key);
  if (host_) host_->reset(key);
}

std::vector<std::byte> DeviceGradCompressor::save() const {
  if (host_) return host_->save();
  grad::StateTable table;
  for (const auto& [key, state] : states_) {
    grad::TensorState& t = table[key];
    t.steps = state->steps;
    t.rank = state->rank;
    t.size = state->size;
    t.count = state->count;
    if (error_feedback_) t.residual = residual(key);
  }
  return grad::serialize_state(spec_, table);
}

void DeviceGradCompressor::load(std::span<const std::byte> blob,
                                const DeviceCollectiveOptions& options) {
  if (host_) return host_->load(blob);
  const grad::StateTable table = grad::deserialize_state(spec_, blob);
  const std::unique_ptr<dev::DeviceOps> ops = dev::make_ops(options);
  std::map<uint64_t, std::unique_ptr<State>> loaded;
  for (const auto& [key, t] : table) {
    if (!t.residual.empty() && t.residual.size() != t.count) {
      throw CorruptStream(tagged("grad:device", "the saved residual of key ", key, " has ",
                                 t.residual.size(), " values for ", t.count, " elements"));
    }
    auto s = std::make_unique<State>();
    s->backend = options.backend;
    s->stream = options.stream;
    s->steps = t.steps;
    s->rank = t.rank;
    s->size = t.size;
    s->count = t.count;
    s->residual = ops->allocate(t.count * sizeof(float));
    const std::vector<float> zeros(t.residual.empty() ? t.count : 0, 0.0f);
    ops->copy_to_device(s->residual.data(), t.residual.empty() ? zeros.data() : t.residual.data(),
                        t.count * sizeof(float));
    loaded[key] = std::move(s);
  }
  ops->synchronize();
  states_ = std::move(loaded);
}

std::vector<float> DeviceGradCompressor::residual(uint64_t key) const {
  if (host_) return host_->residual(key);
  const auto it = states_.find(key);
  if (it == states_.end()) return {};
  const State& s = *it->second;
  DeviceCollectiveOptions o;
  o.backend = s.backend;
  o.stream = s.stream;
  const std::unique_ptr<dev::DeviceOps> ops = dev::make_ops(o);
  std::vector<float> r(s.count);
  ops->copy_to_host(r.data(), s.residual.data(), s.count * sizeof(float));
  ops->synchronize();
  return r;
}

GradStepStats DeviceGradCompressor::allreduce(const Communicator& comm, const GradTensor& tensor,
                                              ConstTensorView grad, TensorView out, ReduceOp op,
                                              const DeviceCollectiveOptions& options) {
  if (host_) return dev::staged_grad_allreduce(comm, *host_, tensor, grad, out, op, options);
  const uint64_t key = tensor.key;
  GradStepStats stats;
  stats.elements = grad.count;
  DeviceCollectiveOptions plain = options;
  plain.policy = nullptr;
  plain.codec = CodecConfig{};
  if (!error_feedback_) {  // "none": a plain allreduce
    CollectiveStats c;
    plain.stats = &c;
    allreduce_device(comm, grad, out, op, plain);
    stats.payload_bytes = grad.bytes();
    stats.wire_bytes = c.wire_bytes;
    stats.comm_seconds = c.seconds;
    return stats;
  }

  coll::ArgCheck check(coll::OpKind::kAllreduce);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_pair(check, ops.get(), "DeviceGradCompressor::allreduce", grad, out);
  dev::check_same_count_or_buffer(check, "DeviceGradCompressor::allreduce", grad, out);
  coll::check_reduce_op(check, op);
  dev::check_device_options(check, comm, coll::OpKind::kAllreduce, plain);
  const auto found = states_.find(key);
  if (found != states_.end() &&
      (found->second->count != grad.count || found->second->size != comm.size() ||
       found->second->rank != comm.rank())) {
    const State& s = *found->second;
    check.fail(tagged("grad:device", "the state of key ", key, " belongs to ", s.count,
                      " elements on rank ", s.rank, " of ", s.size, ", not ", grad.count,
                      " elements on rank ", comm.rank(), " of ", comm.size(),
                      "; reset() it first"));
  }
  dev::add_device_fields(check, grad.count, grad.dtype, plain);
  check.field("key", static_cast<int64_t>(key));
  check.field("spec hash", static_cast<int64_t>(checksum64(spec_.data(), spec_.size())));
  dev::settle(check, comm, unavailable);

  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = grad.count;
  const int p = comm.size(), me = comm.rank();
  std::unique_ptr<State>& slot = states_[key];
  if (!slot) {
    slot = std::make_unique<State>();
    slot->backend = options.backend;
    slot->stream = options.stream;
    slot->count = n;
    slot->rank = me;
    slot->size = p;
    slot->residual = ops->allocate(n * sizeof(float));
    const std::vector<float> zeros(n, 0.0f);
    ops->copy_to_device(slot->residual.data(), zeros.data(), n * sizeof(float));
    ops->synchronize();
  }
  State& state = *slot;
  if (n == 0) {
    state.steps += 1;
    return stats;
  }
  try {
    auto* residual = static_cast<float*>(state.residual.data());
    dev::Memory acc_memory = ops->allocate(n * sizeof(float));
    dev::Memory tmp_memory = ops->allocate(n * sizeof(float));
    auto* acc = static_cast<float*>(acc_memory.data());
    auto* tmp = static_cast<float*>(tmp_memory.data());

    // acc = grad + e (the bytes of grad are a payload of codec "none"); one payload of acc.
    ops->decode_accumulate(CodecConfig{}, grad.data, grad.bytes(), grad.dtype,
                           {DType::kF32, n, residual}, acc);
    const size_t bound = codec_.codec().max_payload_bytes(DType::kF32, n);
    dev::Payload own;
    own.memory = dev::allocate_payload(*ops, bound);
    own.size = ops->encode(codec_, {DType::kF32, n, acc}, own.data(), bound,
                           grad::step_seed(key, state.steps, me));
    stats.payload_bytes = own.size;
    // e = acc - what the peers decode.
    ops->decode(codec_, own.data(), own.size, {DType::kF32, n, tmp});
    ops->subtract(acc, tmp, residual, n);

    const auto c0 = std::chrono::steady_clock::now();
    const int tag = coll::internal_tag(comm.mpi(), options.tag, coll::OpKind::kAllreduce);
    const std::unique_ptr<dev::Transport> transport =
        dev::make_transport(comm, *ops, plain, tag, true);
    dev::DeviceContext ctx{.rank = me,
                           .size = p,
                           .codec = codec_,
                           .seg_elems = n,
                           .seed = 0,
                           .ops = *ops,
                           .transport = *transport,
                           .errors = {},
                           .counters = {}};
    std::vector<dev::Payload> all;
    gather_payloads(ctx, std::move(own), bound, n * sizeof(float), all);
    if (!transport->integrity_error().empty()) {
      throw CorruptStream(transport->integrity_error());
    }
    stats.comm_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    stats.wire_bytes = ctx.counters.wire_bytes;

    // The sum in rank order, ping-ponging between acc and tmp.
    float* sum = acc;
    float* next = tmp;
    ops->decode(codec_, all[0].data(), all[0].size, {DType::kF32, n, sum});
    for (size_t j = 1; j < all.size(); ++j) {
      ops->decode_accumulate(codec_, all[j].data(), all[j].size, DType::kF32, {DType::kF32, n, sum},
                             next);
      std::swap(sum, next);
    }
    ops->round_into(sum, op, p, out);
    ops->synchronize();
  } catch (...) {
    states_.erase(key);  // a half-updated residual must not be used again
    throw;
  }
  state.steps += 1;
  stats.compressed = true;
  stats.compress_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() -
      stats.comm_seconds;
  return stats;
}

}  // namespace hycc
