// topk: the k largest magnitudes of acc = grad + e, sent as (index, value) pairs.
//
// Payload (fixed size, the same on every rank): k float32 values, then the k ascending indices
// bit-packed at index_bits(n) bits (topk_select.h). The payloads are allgathered; every rank adds
// them into a zero tensor in rank order in float32, so all ranks hold the same bits. The values
// are sent exactly, so the residual is acc with the sent elements set to zero.
#include <algorithm>
#include <cstring>

#include "grad/method.h"
#include "grad/topk_select.h"

namespace hycc::grad {
namespace {

class TopKMethod : public Method {
 public:
  explicit TopKMethod(const GradSpec& spec) : spec_(spec) {}

  void step(const StepArgs& a, TensorState& state, GradStepStats& stats) override {
    const size_t n = a.grad.size();
    const int p = a.ex.size();
    const std::span<const float> acc = accumulate(spec_.error_feedback, state.residual, a.grad);
    const size_t k = topk_count(spec_, n);
    const int bits = index_bits(n);
    const size_t words = k + packed_words(k, bits);

    const std::vector<uint64_t> idx = select_topk(acc, k);
    mine_.assign(words, 0);
    for (size_t t = 0; t < k; ++t) std::memcpy(&mine_[t], &acc[idx[t]], sizeof(float));
    pack_indices(idx, bits, std::span<uint32_t>(mine_).subspan(k));
    if (spec_.error_feedback) {
      for (const uint64_t i : idx) state.residual[i] = 0.0f;
      // Values that are not finite rank above every finite one, so they were all sent, and the
      // residual is finite, unless every chosen value was not finite: then some may be left.
      size_t sent_nonfinite = 0;
      for (size_t t = 0; t < k; ++t) sent_nonfinite += nonfinite_mask(mine_[t]) & 1u;
      if (k > 0 && sent_nonfinite == k) zero_nonfinite(state.residual);
    }

    all_.resize(words * static_cast<size_t>(p));
    a.ex.allgather(mine_, all_);
    std::fill(a.out.begin(), a.out.end(), 0.0f);
    std::vector<uint64_t> theirs(k);
    for (int j = 0; j < p; ++j) {
      const std::span<const uint32_t> payload =
          std::span<const uint32_t>(all_).subspan(words * size_t(j), words);
      unpack_indices(payload.subspan(k), bits, theirs);
      for (size_t t = 0; t < k; ++t) {
        if (theirs[t] >= n) {
          throw CorruptStream(
              tagged("grad", "topk: rank ", j, " sent index ", theirs[t], " for a tensor of ", n));
        }
        float v = 0;
        std::memcpy(&v, &payload[t], sizeof v);
        a.out[theirs[t]] += v;
      }
    }
    finish_op(a.out, a.op, p);
    stats.payload_bytes = words * 4;
    stats.wire_bytes = allgather_wire(words * 4, p);
    stats.compressed = true;
  }

 private:
  GradSpec spec_;
  std::vector<uint32_t> mine_, all_;
};

}  // namespace

std::unique_ptr<Method> make_topk_method(const GradSpec& spec) {
  return std::make_unique<TopKMethod>(spec);
}

}  // namespace hycc::grad
