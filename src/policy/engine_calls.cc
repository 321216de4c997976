// The engine's library-only calls that reach a gradient compressor's engine (engine_calls.h).
#include "policy/engine_calls.h"

#include "grad/engine.h"

namespace hycc::policy {

void EngineCalls::feedback_step(PolicyEngine& e, const std::string& spec, const GradTensor& tensor,
                                ConstTensorView input, int rank, int size, const FeedbackRun& run) {
  grad::EngineAccess::engine(e.grad_compressor(spec)).feedback_step(tensor, input, rank, size, run);
}

}  // namespace hycc::policy
