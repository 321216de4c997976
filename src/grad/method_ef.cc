// ef+CODEC: error feedback around any codec, compress-once style.
//
// acc = grad + e; every rank compresses acc once into one stream; the stream sizes (8 bytes per
// rank) and then the streams, padded to the largest, are allgathered; every rank decodes the p
// streams and sums them in rank order in float32 (so all ranks hold the same bits). The residual
// is taken against exactly what the peers decode: e = acc - decode(own stream).
// A reduce-scatter (shard_only) needs only this rank's chunk of the sum: it runs ef2+CODEC's
// first stage (method_ef2.cc; per-chunk streams alltoall'ed to their owners, (p - 1) / p of the
// compressed tensor per rank instead of p - 1 whole streams), with the same residual.
#include <algorithm>
#include <cstring>

#include "codec/peer_stream.h"
#include "grad/method.h"

namespace hycc::grad {
namespace {

class EfMethod : public Method {
 public:
  explicit EfMethod(const GradSpec& spec) : codec_(spec.codec), chunked_(make_ef2_method(spec)) {}

  void step(const StepArgs& a, TensorState& state, GradStepStats& stats) override {
    if (a.shard_only) {
      chunked_->step(a, state, stats);
      return;
    }
    const size_t n = a.grad.size();
    const int p = a.ex.size(), me = a.ex.rank();
    const std::span<const float> acc = accumulate(true, state.residual, a.grad);

    // This rank's stream, in whole words. Every rank's buffer holds max_compressed_bytes, so it
    // can be padded to the largest stream in place (grown once, never cleared).
    const ConstTensorView acc_view{DType::kF32, n, acc.data()};
    const size_t capacity = words_for(max_compressed_bytes(codec_, acc_view));
    if (mine_.size() < capacity) mine_.resize(capacity);
    const size_t bytes = compress(codec_, acc_view, as_bytes(mine_),
                                  {.seed = step_seed(a.tensor.key, state.steps, me)});

    // Sizes, then the streams padded to the largest.
    const uint32_t my_size[2] = {static_cast<uint32_t>(bytes), static_cast<uint32_t>(bytes >> 32)};
    sizes_.resize(2 * static_cast<size_t>(p));
    a.ex.allgather(my_size, sizes_);
    size_t largest = 0;
    for (int j = 0; j < p; ++j) {
      // Every rank compresses the same count with the same codec (grad_allreduce agreed on
      // them), so no honest stream is longer than this rank's bound.
      if (stream_size(j) > capacity * 4) {
        throw CorruptStream(tagged("grad", "ef+: rank ", j, " announced a stream of ",
                                   stream_size(j), " bytes, but ", n, " elements compress to ",
                                   capacity * 4, " bytes at most"));
      }
      largest = std::max(largest, stream_size(j));
    }
    const size_t words = words_for(largest);
    std::memset(as_bytes(mine_).data() + bytes, 0, words * 4 - bytes);
    all_.resize(words * static_cast<size_t>(p));
    a.ex.allgather(std::span<const uint32_t>(mine_).first(words), all_);

    // Sum in rank order; the own stream, decoded from the gathered copy, gives the residual.
    decoded_.resize(n);
    for (int j = 0; j < p; ++j) {
      float* target = j == 0 ? a.out.data() : decoded_.data();
      const auto* stream = reinterpret_cast<const std::byte*>(all_.data() + words * size_t(j));
      codec::decode_peer_stream({stream, stream_size(j)}, TensorView{DType::kF32, n, target});
      if (j == me) {
        for (size_t i = 0; i < n; ++i) state.residual[i] = finite_or_zero(acc[i] - target[i]);
      }
      if (j > 0) {
        for (size_t i = 0; i < n; ++i) a.out[i] += decoded_[i];
      }
    }
    finish_op(a.out, a.op, p);
    stats.payload_bytes = bytes;
    stats.wire_bytes = allgather_wire(words * 4 + 8, p);
    stats.compressed = true;
  }

 private:
  static std::span<std::byte> as_bytes(std::vector<uint32_t>& w) {
    return {reinterpret_cast<std::byte*>(w.data()), w.size() * 4};
  }
  size_t stream_size(int j) const {
    return size_t{sizes_[2 * size_t(j)]} | size_t{sizes_[2 * size_t(j) + 1]} << 32;
  }

  CodecConfig codec_;
  std::unique_ptr<Method> chunked_;  // ef2+CODEC, for reduce-scatters
  // Scratch, reused across steps (not state).
  std::vector<uint32_t> mine_, sizes_, all_;
  std::vector<float> decoded_;
};

}  // namespace

std::unique_ptr<Method> make_ef_method(const GradSpec& spec) {
  return std::make_unique<EfMethod>(spec);
}

}  // namespace hycc::grad
