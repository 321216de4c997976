// fuzz_peer: gradient compressors on rank 0 of p (2 to 4) whose peers' messages are arbitrary
// bytes: what a corrupted or misbehaving peer can make a rank do. The input picks the compressor
// (one of kSpecs), p and the call (allreduce or ZeRO reduce-scatter); the rest are the words the
// peers send, in the order rank 0's exchanges ask for them (stream sizes, streams, chunks,
// indices, sign codes, PowerSGD's factors). Seeds are honest runs: the words the peers of a
// ThreadGroup of p ranks sent. Two steps per input (the second on the state of the first).
// Properties:
// - only CorruptStream escapes a step (the arguments are valid); no memory error;
// - nothing a peer announces makes rank 0 move more than a bound of the tensor's size through an
//   exchange (no allocation or copy sized by a peer).
#include <cstring>
#include <typeinfo>

#include "fuzz_target.h"
#include "grad/engine.h"
#include "grad/thread_exchange.h"
#include "hycc/error.h"

namespace hycc::fuzz {
namespace {

const char* const kSpecs[] = {"none",
                              "ef+quant:bits=4",
                              "ef+zstd",
                              "ef+zfp:rate=4",
                              "ef2+quant:bits=6",
                              "ef2+mpc",
                              "sign",
                              "sign:ef=off",
                              "topk:ratio=0.1",
                              "powersgd:rank=2",
                              "powersgd:rank=1,ef=off"};
constexpr size_t kSpecCount = sizeof kSpecs / sizeof kSpecs[0];
const GradTensor kTensor{1, {12, 40}};  // PowerSGD compresses it (480 >= 2 x 2 x 52)
constexpr size_t kCount = 12 * 40;
constexpr int kSteps = 2;
// The most words one exchange may move per rank: a codec stream of the whole tensor is below
// kCount + 64 words (zstd's worst case and headers included), every other payload smaller.
constexpr size_t kWordsPerRank = 2 * kCount + 256;

struct Call {
  const char* spec;
  int size;
  bool reduce_scatter;
};

Call decode_call(Input& in) {
  const uint8_t spec = in.byte(), size = in.byte(), flags = in.byte();
  return {kSpecs[spec % kSpecCount], 2 + size % 3, (flags & 1) != 0};
}

// Rank `rank`'s gradient of step `step` (the same in the seeds' honest runs and the replay).
std::vector<float> gradient(int rank, int step) {
  std::vector<float> g(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    g[i] = static_cast<float>((i * 37 + size_t(step) * 11 + size_t(rank) * 5) % 97) / 16.0f - 3.0f;
  }
  return g;
}

// One step of `engine` on rank ex.rank(): allreduce in place, or reduce-scatter into a shard.
void step(grad::Engine& engine, grad::Exchange& ex, const Call& call, int step) {
  std::vector<float> g = gradient(ex.rank(), step);
  const TensorView view{DType::kF32, g.size(), g.data()};
  if (call.reduce_scatter) {
    std::vector<float> shard(chunk_range(kCount, ex.size(), ex.rank()).count);
    engine.reduce_scatter(ex, kTensor, view, {DType::kF32, shard.size(), shard.data()},
                          ReduceOp::kAverage);
  } else {
    engine.allreduce(ex, kTensor, view, ReduceOp::kSum);
  }
}

// Rank 0 of `size`: its own part of every exchange is what it passes, the peers' parts come from
// the input (zeros once it runs out).
class PeerExchange : public grad::Exchange {
 public:
  PeerExchange(int size, Input& in) : size_(size), in_(in) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }

 protected:
  void do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) override {
    bounded(mine.size());
    std::copy(mine.begin(), mine.end(), all.begin());
    for (size_t i = mine.size(); i < all.size(); ++i) all[i] = in_.u32();
  }
  void do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) override {
    const size_t block = send.size() / static_cast<size_t>(size_);
    bounded(block);
    std::copy(send.begin(), send.begin() + std::ptrdiff_t(block), recv.begin());
    for (size_t i = block; i < recv.size(); ++i) recv[i] = in_.u32();
  }
  void do_allreduce(std::span<float> data, ReduceOp op) override {
    bounded(data.size());
    add_peers(data, op);
  }
  void do_reduce_scatter(std::span<float> data, ReduceOp op) override {
    bounded(data.size());
    add_peers(data.first(chunk_range(data.size(), size_, 0).count), op);
  }

 private:
  void bounded(size_t words) const {
    check(words <= kWordsPerRank, "an exchange of " + std::to_string(words) +
                                      " words per rank for a tensor of " + std::to_string(kCount) +
                                      " elements");
  }
  // data += every peer's values (float bit patterns from the input), in rank order.
  void add_peers(std::span<float> data, ReduceOp op) {
    for (int j = 1; j < size_; ++j) {
      for (float& v : data) {
        const uint32_t bits = in_.u32();
        float peer;
        std::memcpy(&peer, &bits, sizeof peer);
        v += peer;
      }
    }
    if (op == ReduceOp::kAverage) {
      for (float& v : data) v /= static_cast<float>(size_);
    }
  }

  int size_;
  Input& in_;
};

// Rank 0 of an honest ThreadGroup: records the words its peers sent, in the order of the calls.
// (An allreduce records rank 0's own values as every peer's: its peers' parts are not visible,
// and any finite values serve.)
class RecordingExchange : public grad::ThreadExchange {
 public:
  RecordingExchange(grad::ThreadGroup& group, Bytes& out) : ThreadExchange(group, 0), out_(out) {}

 protected:
  void do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) override {
    ThreadExchange::do_allgather(mine, all);
    record(all.subspan(mine.size()));
  }
  void do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) override {
    ThreadExchange::do_alltoall(send, recv);
    record(recv.subspan(send.size() / static_cast<size_t>(size())));
  }
  void do_allreduce(std::span<float> data, ReduceOp op) override {
    record_floats(data, size() - 1);
    ThreadExchange::do_allreduce(data, op);
  }
  void do_reduce_scatter(std::span<float> data, ReduceOp op) override {
    record_floats(data.first(chunk_range(data.size(), size(), 0).count), size() - 1);
    ThreadExchange::do_reduce_scatter(data, op);
  }

 private:
  void record(std::span<const uint32_t> words) {
    for (const uint32_t w : words) {
      for (int b = 0; b < 4; ++b) out_.push_back(static_cast<uint8_t>(w >> (8 * b)));
    }
  }
  void record_floats(std::span<const float> values, int times) {
    for (int t = 0; t < times; ++t) {
      record({reinterpret_cast<const uint32_t*>(values.data()), values.size()});
    }
  }

  Bytes& out_;
};

}  // namespace

std::vector<Bytes> seeds() {
  std::vector<Bytes> out;
  for (size_t s = 0; s < kSpecCount; ++s) {
    for (const bool reduce_scatter : {false, true}) {
      const int size = reduce_scatter ? 3 : 2;
      Bytes seed = {static_cast<uint8_t>(s), static_cast<uint8_t>(size - 2),
                    static_cast<uint8_t>(reduce_scatter ? 1 : 0)};
      const Call call{kSpecs[s], size, reduce_scatter};
      std::vector<grad::Engine> engines;
      for (int j = 0; j < size; ++j) engines.emplace_back(call.spec);
      grad::ThreadGroup group(size);
      group.run([&](int j) {
        if (j == 0) {
          RecordingExchange ex(group, seed);
          for (int t = 0; t < kSteps; ++t) step(engines[0], ex, call, t);
        } else {
          grad::ThreadExchange ex(group, j);
          for (int t = 0; t < kSteps; ++t) step(engines[size_t(j)], ex, call, t);
        }
      });
      out.push_back(std::move(seed));
    }
  }
  return out;
}

}  // namespace hycc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hycc;
  fuzz::Input in(data, size);
  const fuzz::Call call = fuzz::decode_call(in);
  grad::Engine engine(call.spec);
  fuzz::PeerExchange ex(call.size, in);
  for (int t = 0; t < fuzz::kSteps; ++t) {
    try {
      fuzz::step(engine, ex, call, t);
    } catch (const CorruptStream&) {
      // The peers' bytes were refused; the next step starts from a clean state for the key.
    } catch (const std::exception& e) {
      fuzz::fail(std::string(call.spec) + ": a peer's bytes made a step throw " + typeid(e).name() +
                 ": " + e.what());
    }
  }
  return 0;
}
