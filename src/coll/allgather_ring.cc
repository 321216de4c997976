// Ring allgather of blocks compressed once (the protocol is described in ring_phases.h). Per
// rank: (p - 1) compressed blocks sent, 1 compression, p - 1 decompressions (p with a lossy
// codec: the owner decodes its own stream). Error: one compression, |x - x'| <= eb for an
// absolute bound eb.
#include <utility>

#include "coll/algorithms.h"
#include "coll/ring_phases.h"

namespace hycc::coll {
namespace {

// Seed phase of allgather streams (reduce-scatter phases are the step numbers 0 .. p-2).
constexpr uint64_t kAllgatherPhase = uint64_t{1} << 32;

}  // namespace

RingAllgather::RingAllgather(Context& ctx, ConstTensorView own, std::span<const TensorView> blocks)
    : ctx_(ctx), own_(own), blocks_(blocks) {}

TensorView RingAllgather::block(int s) const {
  return blocks_[static_cast<size_t>(ring_mod(ctx_.rank - s - 1, ctx_.size))];
}

size_t RingAllgather::first_segments() const {
  return Segments{own_.count, ctx_.seg_elems}.count();
}

size_t RingAllgather::recv_segments(int s) const {
  return Segments{block(s).count, ctx_.seg_elems}.count();
}

size_t RingAllgather::recv_capacity(int s, size_t k) const {
  const TensorView b = block(s);
  return max_compressed_bytes(ctx_.codec, b.dtype, Segments{b.count, ctx_.seg_elems}[k].count);
}

void RingAllgather::first(size_t k, StreamBuffer& out) const {
  const ChunkRange g = Segments{own_.count, ctx_.seg_elems}[k];
  const ConstTensorView in = slice(own_, g.offset, g.count);
  compress_into(ctx_, in, out, stream_seed(ctx_.seed, ctx_.rank, kAllgatherPhase, k));
  adopt_own_stream(ctx_, stream_view(out), in,
                   slice(blocks_[static_cast<size_t>(ctx_.rank)], g.offset, g.count));
}

void RingAllgather::arrived(int s, size_t k, StreamBuffer& in, StreamBuffer& out) const {
  const TensorView b = block(s);
  const ChunkRange g = Segments{b.count, ctx_.seg_elems}[k];
  try {
    decode_stream(ctx_, stream_view(in), slice(b, g.offset, g.count));
  } catch (const Error&) {
    ctx_.errors.capture();
  }
  if (s + 1 < steps()) {  // forwarded unchanged
    in.raw_bytes = g.count * dtype_size(b.dtype);
    std::swap(in, out);
  }
}

void allgather_ring(Context& ctx, ConstTensorView send, TensorView recv) {
  const std::vector<TensorView> blocks = block_views(recv, ctx.size, send.count);
  allgather_blocks_ring(ctx, send, blocks);
}

void allgather_blocks_ring(Context& ctx, ConstTensorView own, std::span<const TensorView> blocks) {
  RingAllgather ag(ctx, own, blocks);
  run_ring(ctx, RingSchedule{
                    .steps = ag.steps(),
                    .first_segments = ag.first_segments(),
                    .recv_segments = [&](int s) { return ag.recv_segments(s); },
                    .recv_capacity = [&](int s, size_t k) { return ag.recv_capacity(s, k); },
                    .first = [&](size_t k, StreamBuffer& out) { ag.first(k, out); },
                    .arrived = [&](int s, size_t k, StreamBuffer& in,
                                   StreamBuffer& out) { ag.arrived(s, k, in, out); },
                });
}

}  // namespace hycc::coll
