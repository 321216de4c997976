// The public API of the gradient compressors (hycc/grad.h) over the Engine.
#include "hycc/grad.h"

#include "grad/engine.h"
#include "grad/exchange.h"

namespace hycc {

GradCompressor::GradCompressor(std::string_view spec)
    : engine_(std::make_unique<grad::Engine>(spec)) {}
GradCompressor::~GradCompressor() = default;
GradCompressor::GradCompressor(GradCompressor&&) noexcept = default;
GradCompressor& GradCompressor::operator=(GradCompressor&&) noexcept = default;

const std::string& GradCompressor::spec() const { return engine_->spec().canonical; }

void GradCompressor::reset() { engine_->states().clear(); }
void GradCompressor::reset(uint64_t key) { engine_->states().erase(key); }
size_t GradCompressor::tensors() const { return engine_->states().size(); }

std::vector<std::byte> GradCompressor::save() const {
  return grad::serialize_state(spec(), engine_->states());
}

void GradCompressor::load(std::span<const std::byte> blob) {
  engine_->states() = grad::deserialize_state(spec(), blob);
}

std::vector<float> GradCompressor::residual(uint64_t key) const {
  const auto it = engine_->states().find(key);
  return it == engine_->states().end() ? std::vector<float>{} : it->second.residual;
}

GradStepStats grad_allreduce(const Communicator& comm, GradCompressor& compressor,
                             const GradTensor& tensor, TensorView grad,
                             const GradOptions& options) {
  grad::CommExchange ex(comm, options.tag);
  return compressor.engine_->allreduce(ex, tensor, grad, options.op);
}

GradStepStats grad_reduce_scatter(const Communicator& comm, GradCompressor& compressor,
                                  const GradTensor& tensor, ConstTensorView grad, TensorView shard,
                                  const GradOptions& options) {
  grad::CommExchange ex(comm, options.tag);
  return compressor.engine_->reduce_scatter(ex, tensor, grad, shard, options.op);
}

std::string grad_help() { return grad::grad_spec_help(); }

}  // namespace hycc
