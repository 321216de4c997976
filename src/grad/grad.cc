// The public API of the gradient compressors (hycc/grad.h) over the Engine.
#include "hycc/grad.h"

#include "comm/call_check.h"
#include "common/xxh3.h"
#include "grad/engine.h"
#include "grad/exchange.h"
#include "grad/low_rank_plan.h"

namespace hycc {
namespace {

// The arguments of a call, checked on this rank and agreed by every rank (one small
// MPI_Allreduce, as hycc's collectives do before their own algorithms and the device
// compressors before every call; not with ArgumentCheck::kNever): a rank with another count, dtype,
// layout, spec, op or tag makes every rank throw, instead of leaving its peers waiting or with
// streams sized for another tensor. Not the key: it names this rank's state only (the policy
// collectives derive it from the buffer's address when the caller gives none).
void agree_on_call(const Communicator& comm, const grad::Engine& engine, Operation kind,
                   const char* what, const GradTensor& tensor, ConstTensorView grad,
                   const TensorView* shard, const GradOptions& options) {
  comm::ArgCheck check(kind);
  const std::string error = engine.call_error(what, tensor, grad, shard, comm.rank(), comm.size());
  if (!error.empty()) check.fail(error);
  comm::check_reduce_op(check, options.op);
  const std::string& spec = engine.spec().canonical;
  check.field("count", static_cast<int64_t>(grad.count));
  check.field("dtype", static_cast<int64_t>(grad.dtype));
  check.field("layout hash", grad::layout_hash(tensor));
  check.field("spec hash", static_cast<int64_t>(xxh3(spec.data(), spec.size())));
  check.field("tag", options.tag);
  comm::check_argument_check(check, options.check_arguments);
  check.run(comm, options.check_arguments != ArgumentCheck::kNever);
}

}  // namespace

GradCompressor::GradCompressor(std::string_view spec)
    : engine_(std::make_unique<grad::Engine>(spec)) {}
GradCompressor::~GradCompressor() = default;
GradCompressor::GradCompressor(GradCompressor&&) noexcept = default;
GradCompressor& GradCompressor::operator=(GradCompressor&&) noexcept = default;

const std::string& GradCompressor::spec() const { return engine_->spec().canonical; }

void GradCompressor::reset() {
  engine_->with_states([](grad::StateTable& t) { t.clear(); });
}

void GradCompressor::reset(uint64_t key) {
  engine_->with_states([key](grad::StateTable& t) { t.erase(key); });
}

size_t GradCompressor::tensors() const {
  return engine_->with_states([](const grad::StateTable& t) { return t.size(); });
}

size_t GradCompressor::state_bytes() const {
  return engine_->with_states([](const grad::StateTable& t) {
    size_t bytes = 0;
    for (const auto& [key, s] : t) bytes += (s.residual.size() + s.aux.size()) * sizeof(float);
    return bytes;
  });
}

std::vector<std::byte> GradCompressor::save() const {
  return engine_->with_states(
      [this](const grad::StateTable& t) { return grad::serialize_state(spec(), t); });
}

void GradCompressor::load(std::span<const std::byte> blob) {
  grad::StateTable loaded = grad::deserialize_state(spec(), blob);
  engine_->with_states([&loaded](grad::StateTable& t) { t = std::move(loaded); });
}

std::vector<float> GradCompressor::residual(uint64_t key) const {
  return engine_->with_states([key](const grad::StateTable& t) {
    const auto it = t.find(key);
    return it == t.end() ? std::vector<float>{} : it->second.residual;
  });
}

GradStepStats grad_allreduce(const Communicator& comm, GradCompressor& compressor,
                             const GradTensor& tensor, TensorView grad,
                             const GradOptions& options) {
  agree_on_call(comm, *compressor.engine_, Operation::kAllreduce, "grad_allreduce", tensor, grad,
                nullptr, options);
  grad::CommExchange ex(comm, options.tag);
  return compressor.engine_->allreduce(ex, tensor, grad, options.op);
}

GradStepStats grad_reduce_scatter(const Communicator& comm, GradCompressor& compressor,
                                  const GradTensor& tensor, ConstTensorView grad, TensorView shard,
                                  const GradOptions& options) {
  agree_on_call(comm, *compressor.engine_, Operation::kReduceScatter, "grad_reduce_scatter", tensor,
                grad, &shard, options);
  grad::CommExchange ex(comm, options.tag);
  return compressor.engine_->reduce_scatter(ex, tensor, grad, shard, options.op);
}

std::string grad_help() { return grad::grad_spec_help(); }

}  // namespace hycc
