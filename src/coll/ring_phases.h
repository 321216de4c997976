// The two halves of the ring algorithms, as pieces of a RingSchedule (ring_pipeline.h):
// the compressed reduce-scatter (reduce_scatter_ring.cc) and the allgather of streams compressed
// once (allgather_ring.cc). reduce_scatter and allgather run one half each; allreduce runs both
// as one ring of 2 (p - 1) steps, so that the first reduced segment starts round the allgather
// while the rest of the reduce-scatter is still moving.
#pragma once

#include <span>
#include <vector>

#include "coll/coll_internal.h"
#include "coll/ring_pipeline.h"

namespace hycc::coll {

// a mod p in [0, p), for ring positions rank - t - 1 and the like.
inline int ring_mod(int a, int p) { return ((a % p) + p) % p; }

// Ring reduce-scatter with compression at every hop. Chunk j of the tensor is
// chunk_range(n, p, j). At step t = 0 .. p-2 rank r sends its partial sum of chunk
// (r - t - 1) mod p to rank r + 1 and receives the partial sum of chunk (r - t - 2) mod p from
// rank r - 1, decompresses it and adds its own elements in float32. Step 0 sends the rank's own
// elements in their dtype; later steps send float32 partial sums, so that 16-bit inputs are
// rounded once, at the end, never at a hop. The chunk received at the last step is chunk r,
// summed over all p ranks.
class RingReduceScatter {
 public:
  // `chunks`, when not empty, replaces chunk_range(n, p, j) as chunk j (ctx.size ranges of send,
  // any sizes: the two-level reduce-scatter's); the caller's memory, read during the ring.
  RingReduceScatter(Context& ctx, ConstTensorView send, std::span<const ChunkRange> chunks = {});

  int steps() const { return ctx_.size - 1; }
  size_t first_segments() const;
  size_t recv_segments(int t) const;
  size_t recv_capacity(int t, size_t k) const;
  // Compresses segment k of this rank's elements of chunk r - 1.
  void first(size_t k, StreamBuffer& out) const;
  // Decodes stream k of step t and adds this rank's elements: partial() then holds the partial
  // sum of that segment, which is `segment(t, k)` of the chunk received at step t (the whole
  // sum at the last step). A malformed stream is captured in ctx.errors and counts as zeros.
  void reduce(int t, size_t k, const StreamBuffer& in);
  const float* partial() const { return partial_; }
  ChunkRange segment(int t, size_t k) const;
  // Compresses partial() as stream k of step t + 1.
  void send_on(int t, size_t k, StreamBuffer& out) const;

 private:
  ChunkRange chunk(int t) const;     // the chunk received at step t
  ChunkRange chunk_at(int j) const;  // chunk j of send
  DType wire(int t) const { return t == 0 ? send_.dtype : DType::kF32; }

  Context& ctx_;
  ConstTensorView send_;
  std::span<const ChunkRange> chunks_;
  float* partial_;  // one segment, in scratch reused by the thread's later calls
};

// Ring allgather of blocks compressed once. Rank j compresses its block segment by segment and
// replaces its own copy by the decoded stream. At step s = 0 .. p-2 rank r sends the streams of
// block (r - s) mod p to rank r + 1 and receives those of block (r - s - 1) mod p from rank
// r - 1, decodes them into place and forwards the same bytes at step s + 1. Every rank decodes
// the bytes the block's owner produced, so all copies are bit-identical.
class RingAllgather {
 public:
  // blocks[j] receives block j (any sizes); `own` is this rank's data, which may be
  // blocks[rank] itself.
  RingAllgather(Context& ctx, ConstTensorView own, std::span<const TensorView> blocks);

  int steps() const { return ctx_.size - 1; }
  size_t first_segments() const;
  size_t recv_segments(int s) const;
  size_t recv_capacity(int s, size_t k) const;
  // Compresses segment k of `own` and sets this rank's block to its decoded value.
  void first(size_t k, StreamBuffer& out) const;
  // Decodes stream k of step s into its block and, unless s is the last step, forwards it.
  void arrived(int s, size_t k, StreamBuffer& in, StreamBuffer& out) const;

 private:
  TensorView block(int s) const;  // the block received at step s

  Context& ctx_;
  ConstTensorView own_;
  std::span<const TensorView> blocks_;
};

}  // namespace hycc::coll
