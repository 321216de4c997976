// ef2+CODEC: error feedback around any codec in two stages, as sign does with its 1-bit code
// (1-bit Adam's compressed allreduce), so that each rank sends 2 (p - 1) / p of the compressed
// tensor however many ranks there are (ef+CODEC gathers p - 1 whole streams).
//
// The tensor is cut into p chunks (chunk_range); rank j is the "server" of chunk j.
//   1. Worker: acc = grad + e_w; every chunk of acc is compressed into its own stream;
//      e_w = acc - decoded. An alltoall sends chunk j's stream to rank j.
//   2. Server: s = the p decoded streams of this rank's chunk summed in rank order (float32),
//      averaged for kAverage, plus the server residual e_s; s is compressed, e_s = s - decoded.
//      An allgather of the server streams gives every rank the same bytes, decoded alike.
// A reduce-scatter (shard_only) stops after the sum of stage 2: this rank's chunk is exact, no
// server residual, (p - 1) / p of the compressed tensor on the wire. ef+CODEC runs this too for
// its reduce-scatters (method_ef.cc).
// Streams travel in blocks of whole words: one word with the stream's length, then the stream,
// padded to the largest block of the stage (agreed by an allgather of one word per rank).
// Seeds: worker chunk j uses step_seed(key, step, rank) + j, the server step_seed(key, step,
// p + rank), so stochastic rounding differs between every stream of a step.
#include <algorithm>
#include <cstring>

#include "codec/peer_stream.h"
#include "grad/method.h"

namespace hycc::grad {
namespace {

class Ef2Method : public Method {
 public:
  explicit Ef2Method(const GradSpec& spec) : codec_(spec.codec) {}

  void step(const StepArgs& a, TensorState& state, GradStepStats& stats) override {
    const size_t n = a.grad.size();
    const int p = a.ex.size(), me = a.ex.rank();
    const size_t pz = static_cast<size_t>(p);
    const std::span<const float> acc = accumulate(true, state.residual, a.grad);
    const uint64_t seed = step_seed(a.tensor.key, state.steps, me);

    // 1. Worker: one stream per chunk, the worker residual against its decoding.
    std::vector<Stream>& streams = worker_;
    streams.resize(pz);
    size_t payload = 0, largest = 0;
    for (int j = 0; j < p; ++j) {
      const ChunkRange c = chunk_range(n, p, j);
      payload += encode(acc.subspan(c.offset, c.count), seed + uint64_t(j), streams[size_t(j)]);
      largest = std::max(largest, streams[size_t(j)].used);
      residual_of(streams[size_t(j)].view(), acc.subspan(c.offset, c.count),
                  std::span<float>(state.residual).subspan(c.offset, c.count),
                  j == me ? own_worker_ : decoded_);
    }
    const size_t block = agreed_block(a.ex, largest, n);
    pack(streams, block, send_);
    recv_.resize(block * pz);
    a.ex.alltoall(send_, recv_);

    // 2. Server: this rank's chunk summed in rank order, plus the server residual. The block
    // from this rank is its own stream: decoded already, for the worker residual.
    const ChunkRange mine = chunk_range(n, p, me);
    sum_.assign(mine.count, 0.0f);
    decoded_.resize(mine.count);
    for (int j = 0; j < p; ++j) {
      if (j != me) {
        decode_block(std::span<const uint32_t>(recv_).subspan(block * size_t(j), block), decoded_);
      }
      const std::vector<float>& d = j == me ? own_worker_ : decoded_;
      for (size_t i = 0; i < mine.count; ++i) sum_[i] = j == 0 ? d[i] : sum_[i] + d[i];
    }
    finish_op(sum_, a.op, p);
    stats.payload_bytes = payload;  // the whole tensor, compressed by the worker
    stats.compressed = true;
    if (a.shard_only) {
      std::copy(sum_.begin(), sum_.end(), a.out.begin() + std::ptrdiff_t(mine.offset));
      stats.wire_bytes = (block + 1) * 4 * (pz - 1);
      return;
    }
    if (state.aux.size() != mine.count) state.aux.assign(mine.count, 0.0f);
    for (size_t i = 0; i < mine.count; ++i) sum_[i] += state.aux[i];
    encode(sum_, step_seed(a.tensor.key, state.steps, p + me), server_);
    residual_of(server_.view(), sum_, state.aux, own_server_);

    // Everyone decodes every server's stream.
    const size_t server_block = agreed_block(a.ex, server_.used, n);
    pack(std::span<const Stream>(&server_, 1), server_block, mine_block_);
    all_.resize(server_block * pz);
    a.ex.allgather(mine_block_, all_);
    for (int j = 0; j < p; ++j) {
      const ChunkRange c = chunk_range(n, p, j);
      if (j == me) {  // this rank's server stream: decoded already, for the server residual
        std::copy(own_server_.begin(), own_server_.end(), a.out.begin() + std::ptrdiff_t(c.offset));
        continue;
      }
      decode_block(std::span<const uint32_t>(all_).subspan(server_block * size_t(j), server_block),
                   a.out.subspan(c.offset, c.count));
    }
    stats.wire_bytes = (block + server_block + 2) * 4 * (pz - 1);
  }

 private:
  // A stream in whole words: one word with its length in bytes, then the stream, the last word
  // padded with zeros. The buffer only grows (no clearing per step); `used` words are valid.
  struct Stream {
    std::vector<uint32_t> words;
    size_t used = 0;
    std::span<const uint32_t> view() const { return {words.data(), used}; }
  };

  // Compresses `values` into `out`. Returns the stream's length in bytes.
  size_t encode(std::span<const float> values, uint64_t seed, Stream& out) {
    const ConstTensorView in{DType::kF32, values.size(), values.data()};
    const size_t capacity = 1 + words_for(max_compressed_bytes(codec_, in));
    if (out.words.size() < capacity) out.words.resize(capacity);
    auto* stream = reinterpret_cast<std::byte*>(out.words.data() + 1);
    const size_t bytes = compress(codec_, in, {stream, (capacity - 1) * 4}, {.seed = seed});
    std::memset(stream + bytes, 0, words_for(bytes) * 4 - bytes);
    out.words[0] = static_cast<uint32_t>(bytes);
    out.used = 1 + words_for(bytes);
    return bytes;
  }

  // decoded = decode(words) (words as encode wrote them), residual = from - decoded; residual
  // may be from.
  static void residual_of(std::span<const uint32_t> words, std::span<const float> from,
                          std::span<float> residual, std::vector<float>& decoded) {
    decoded.resize(from.size());
    decode_block(words, decoded);
    for (size_t i = 0; i < from.size(); ++i) residual[i] = finite_or_zero(from[i] - decoded[i]);
  }

  static void decode_block(std::span<const uint32_t> block, std::span<float> out) {
    const size_t bytes = block.empty() ? 0 : block[0];
    if (block.empty() || words_for(bytes) + 1 > block.size()) {
      throw CorruptStream(tagged("grad", "ef2: a block of ", block.size() * 4,
                                 " bytes cannot hold its stream of ", bytes, " bytes"));
    }
    codec::decode_peer_stream({reinterpret_cast<const std::byte*>(block.data() + 1), bytes},
                              TensorView{DType::kF32, out.size(), out.data()});
  }

  // The largest block of any rank: one word per rank gathered. Every rank codes chunks of the
  // same tensor of n elements with the same codec (grad_allreduce agreed on them), so no honest
  // block is longer than the bound of the largest chunk (chunk 0).
  size_t agreed_block(Exchange& ex, size_t mine, size_t n) {
    const uint32_t own = static_cast<uint32_t>(mine);
    sizes_.resize(static_cast<size_t>(ex.size()));
    ex.allgather(std::span<const uint32_t>(&own, 1), sizes_);
    const size_t bound = 1 + words_for(max_compressed_bytes(codec_, DType::kF32,
                                                            chunk_range(n, ex.size(), 0).count));
    for (size_t j = 0; j < sizes_.size(); ++j) {
      if (sizes_[j] > bound) {
        throw CorruptStream(tagged("grad", "ef2: rank ", j, " announced a block of ", sizes_[j],
                                   " words, but a chunk of ", n, " elements over ", ex.size(),
                                   " ranks codes into ", bound, " words at most"));
      }
    }
    return *std::max_element(sizes_.begin(), sizes_.end());
  }

  // The streams one after another, each padded with zeros to `block` words.
  static void pack(std::span<const Stream> streams, size_t block, std::vector<uint32_t>& out) {
    out.resize(block * streams.size());
    for (size_t j = 0; j < streams.size(); ++j) {
      const std::span<const uint32_t> v = streams[j].view();
      const auto at = out.begin() + std::ptrdiff_t(block * j);
      std::copy(v.begin(), v.end(), at);
      std::fill(at + std::ptrdiff_t(v.size()), at + std::ptrdiff_t(block), 0u);
    }
  }

  CodecConfig codec_;
  // Scratch, reused across steps (not state).
  std::vector<Stream> worker_;
  Stream server_;
  std::vector<uint32_t> send_, recv_, sizes_, mine_block_, all_;
  std::vector<float> sum_, decoded_;
  std::vector<float> own_worker_, own_server_;  // this rank's streams decoded (its chunk)
};

}  // namespace

std::unique_ptr<Method> make_ef2_method(const GradSpec& spec) {
  return std::make_unique<Ef2Method>(spec);
}

}  // namespace hycc::grad
