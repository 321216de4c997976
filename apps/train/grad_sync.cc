#include "grad_sync.h"

#include <algorithm>
#include <chrono>

#include "hycc/error.h"

namespace hycc::train {
namespace {

constexpr uint64_t kEmbeddingKey = uint64_t{1} << 40;

void add_time(TrainComm& c, std::chrono::steady_clock::time_point start) {
  c.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ChunkRange zero_shard(size_t total, const ParallelGrid& grid) {
  return chunk_range(total, grid.zero().size(), grid.zero().rank());
}

void reduce_tied_embedding(GPT& model, TrainComm& c) {
  if (!gpt_needs_embedding_reduction(model)) return;
  size_t count = 0;
  float* wte = gpt_tied_embedding_grad(model, &count);
  if (c.grid.embedding().size() > 1) record_sent(c, "embedding", "gradient", wte, count);
  policy_allreduce(c, c.grid.embedding(), wte, count, kEmbeddingKey);
}

void allreduce_gradient_buckets(GPT& model, TrainComm& c, size_t bucket_floats) {
  std::vector<float>& g = model.grads_memory;
  const Communicator& dp = c.grid.dp();
  if (dp.size() == 1) return;
  uint64_t bucket = 0;
  for (size_t begin = 0; begin < g.size(); begin += bucket_floats, ++bucket) {
    const size_t count = std::min(bucket_floats, g.size() - begin);
    const std::vector<std::vector<size_t>> pieces = bucket_pieces(model, begin, count);
    CollectiveOptions o = c.policy(bucket + 1);
    o.pieces = pieces;
    record_sent(c, "dp", "gradient", g.data() + begin, count);
    const auto start = std::chrono::steady_clock::now();
    WireTensor w(c, g.data() + begin, count);
    allreduce(dp, w.view(), w.view(), ReduceOp::kSum, o);
    w.store();
    add_time(c, start);
  }
}

std::vector<std::vector<size_t>> bucket_pieces(const GPT& model, size_t begin, size_t count) {
  std::vector<const TensorInfo*> tensors;
  for (const TensorInfo& t : model.tensors) tensors.push_back(&t);
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  std::vector<std::vector<size_t>> pieces;
  const size_t end = begin + count;
  size_t at = begin;  // the first float not in a piece yet
  const auto vector_to = [&](size_t to) {
    if (to > at) pieces.push_back({to - at});
    at = std::max(at, to);
  };
  for (const TensorInfo* t : tensors) {
    const size_t lo = std::max(t->offset, at), hi = std::min(t->offset + t->count, end);
    if (lo >= hi) continue;
    vector_to(lo);  // floats of no tensor before it
    const size_t cols = static_cast<size_t>(t->cols);
    // Whole rows of the matrix within [lo, hi).
    const size_t first = t->offset + (lo - t->offset + cols - 1) / cols * cols;
    const size_t last = t->offset + (hi - t->offset) / cols * cols;
    if (cols > 1 && last > first) {
      vector_to(first);
      pieces.push_back({(last - first) / cols, cols});
      at = last;
    }
    vector_to(hi);
  }
  vector_to(end);
  return pieces;
}

void reduce_scatter_gradients(GPT& model, TrainComm& c, int stage, size_t bucket_floats) {
  const Communicator& zero = c.grid.zero();
  if (zero.size() == 1) return;
  std::vector<float>& g = model.grads_memory;
  const ChunkRange shard = zero_shard(g.size(), c.grid);
  if (stage == 1) {
    const std::vector<std::vector<size_t>> pieces = bucket_pieces(model, 0, g.size());
    CollectiveOptions o = c.policy(1);
    o.pieces = pieces;  // the whole buffer: every tensor whole
    record_sent(c, "zero_grad", "gradient", g.data(), g.size());
    const auto start = std::chrono::steady_clock::now();
    WireTensor all(c, g.data(), g.size());
    WireTensor mine(c, g.data() + shard.offset, shard.count, false);
    reduce_scatter(zero, all.view(), mine.view(), ReduceOp::kSum, o);
    mine.store();
    add_time(c, start);
    return;
  }
  // Stage 2: slices of bucket_floats of every shard; the largest shard is rank 0's.
  const size_t largest = chunk_range(g.size(), zero.size(), 0).count;
  std::vector<float> packed;
  uint64_t bucket = 0;
  for (size_t lo = 0; lo < largest; lo += bucket_floats, ++bucket) {
    packed.clear();
    std::vector<std::vector<size_t>> pieces;  // the tensors of each rank's slice, in order
    size_t mine = 0;
    for (int r = 0; r < zero.size(); ++r) {
      const ChunkRange sr = chunk_range(g.size(), zero.size(), r);
      const size_t n = lo < sr.count ? std::min(bucket_floats, sr.count - lo) : 0;
      if (n > 0) {
        packed.insert(packed.end(), g.data() + sr.offset + lo, g.data() + sr.offset + lo + n);
        for (std::vector<size_t>& p : bucket_pieces(model, sr.offset + lo, n)) {
          pieces.push_back(std::move(p));
        }
      }
      if (r == zero.rank()) mine = n;
    }
    if (chunk_range(packed.size(), zero.size(), zero.rank()).count != mine) {
      throw InvalidArgument(tagged("train:zero", "bucket ", bucket, " does not split by shards"));
    }
    record_sent(c, "zero_grad", "gradient", packed.data(), packed.size());
    const auto start = std::chrono::steady_clock::now();
    // This rank's slice (none once its shard is used up: a smaller shard or an empty one).
    float* slice = mine > 0 ? g.data() + shard.offset + lo : nullptr;
    CollectiveOptions o = c.policy(bucket + 1);
    o.pieces = pieces;
    WireTensor send(c, packed.data(), packed.size());
    WireTensor recv(c, slice, mine, false);
    reduce_scatter(zero, send.view(), recv.view(), ReduceOp::kSum, o);
    recv.store();
    add_time(c, start);
  }
}

void allgather_parameters(GPT& model, TrainComm& c) {
  const Communicator& zero = c.grid.zero();
  if (zero.size() == 1) return;
  std::vector<float>& p = model.params_memory;
  // allgather takes equal blocks: each shard travels padded to the largest (rank 0's).
  const size_t block = chunk_range(p.size(), zero.size(), 0).count;
  std::vector<float> all(block * zero.size(), 0.0f);
  const ChunkRange shard = zero_shard(p.size(), c.grid);
  float* mine = all.data() + block * zero.rank();
  std::copy_n(p.data() + shard.offset, shard.count, mine);
  record_sent(c, "zero_param", "parameter", mine, shard.count);
  const auto start = std::chrono::steady_clock::now();
  WireTensor send(c, static_cast<const float*>(mine), block);
  WireTensor recv(c, all.data(), all.size(), false);
  allgather(zero, send.view(), recv.view(), c.policy(1));
  recv.store();
  add_time(c, start);
  for (int r = 0; r < zero.size(); ++r) {
    const ChunkRange sr = chunk_range(p.size(), zero.size(), r);
    std::copy_n(all.data() + block * r, sr.count, p.data() + sr.offset);
  }
}

}  // namespace hycc::train
