// sign: 1 bit per value and one float32 scale per chunk, in two stages (1-bit Adam, signSGD with
// error feedback).
//
// A chunk of values x is encoded as scale = mean |x| (summed in double in sign_block.h's fixed
// order, rounded to float32) and one bit per value, 1 for x >= 0; it decodes to +scale or -scale.
// The tensor is cut into p chunks (chunk_range); rank j is the "server" of chunk j.
//   1. Worker: acc = grad + e_w; every chunk of acc is encoded; e_w = acc - decoded. An alltoall
//      sends chunk j to rank j.
//   2. Server: s = the decoded chunks summed in rank order (float32), averaged for kAverage,
//      plus the server residual e_s; s is encoded, e_s = s - decoded. An allgather of the
//      encoded chunks gives every rank the decoded result (the same bytes, the same bits).
// Without error feedback (sign:ef=off) neither residual is kept.
// A reduce-scatter (shard_only) stops after the sum of stage 2: this rank's chunk, exact, no
// server residual, half the bytes.
#include <algorithm>

#include "grad/method.h"
#include "grad/sign_block.h"
#include "grad/sign_codec.h"

namespace hycc::grad {
namespace {

using sign::chunk_words;

class SignMethod : public Method {
 public:
  explicit SignMethod(const GradSpec& spec) : ef_(spec.error_feedback) {}

  void step(const StepArgs& a, TensorState& state, GradStepStats& stats) override {
    const size_t n = a.grad.size();
    const int p = a.ex.size(), me = a.ex.rank();
    const size_t pz = static_cast<size_t>(p);
    const size_t block = chunk_words(chunk_range(n, p, 0).count);  // chunk 0 is the largest
    const std::span<const float> acc = accumulate(ef_, state.residual, a.grad);

    // 1. Worker: encode every chunk, keep the worker residual, send chunk j to rank j.
    send_.assign(block * pz, 0);
    decoded_.resize(chunk_range(n, p, 0).count);
    for (int j = 0; j < p; ++j) {
      const ChunkRange c = chunk_range(n, p, j);
      const std::span<uint32_t> out = std::span<uint32_t>(send_).subspan(block * size_t(j), block);
      encode_sign(acc.subspan(c.offset, c.count), out);
      if (ef_) {
        const std::span<float> dec(decoded_.data(), c.count);
        decode_sign(out, dec);
        for (size_t i = 0; i < c.count; ++i) {
          state.residual[c.offset + i] = finite_or_zero(acc[c.offset + i] - dec[i]);
        }
      }
    }
    recv_.resize(block * pz);
    a.ex.alltoall(send_, recv_);

    // 2. Server: sum this rank's chunk in rank order, add the server residual, encode it.
    const ChunkRange mine = chunk_range(n, p, me);
    sum_.assign(mine.count, 0.0f);
    const std::span<float> dec(decoded_.data(), mine.count);
    for (int j = 0; j < p; ++j) {
      decode_sign(std::span<const uint32_t>(recv_).subspan(block * size_t(j), block), dec);
      for (size_t i = 0; i < mine.count; ++i) sum_[i] = j == 0 ? dec[i] : sum_[i] + dec[i];
    }
    finish_op(sum_, a.op, p);
    stats.payload_bytes = block * 4 * pz;  // the whole tensor, encoded by the worker
    stats.compressed = true;
    if (a.shard_only) {
      std::copy(sum_.begin(), sum_.end(), a.out.begin() + std::ptrdiff_t(mine.offset));
      stats.wire_bytes = block * 4 * (pz - 1);
      return;
    }
    if (ef_) {
      if (state.aux.size() != mine.count) state.aux.assign(mine.count, 0.0f);
      for (size_t i = 0; i < mine.count; ++i) sum_[i] += state.aux[i];
    }
    own_.resize(block);
    encode_sign(sum_, own_);
    if (ef_) {
      decode_sign(own_, dec);
      for (size_t i = 0; i < mine.count; ++i) state.aux[i] = finite_or_zero(sum_[i] - dec[i]);
    }

    // Everyone decodes every server's chunk.
    all_.resize(block * pz);
    a.ex.allgather(own_, all_);
    for (int j = 0; j < p; ++j) {
      const ChunkRange c = chunk_range(n, p, j);
      decode_sign(std::span<const uint32_t>(all_).subspan(block * size_t(j), block),
                  a.out.subspan(c.offset, c.count));
    }
    stats.wire_bytes = 2 * block * 4 * (pz - 1);
  }

 private:
  bool ef_;
  std::vector<uint32_t> send_, recv_, own_, all_;
  std::vector<float> decoded_, sum_;
};

}  // namespace

std::unique_ptr<Method> make_sign_method(const GradSpec& spec) {
  return std::make_unique<SignMethod>(spec);
}

}  // namespace hycc::grad
