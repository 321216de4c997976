// Ring reduce-scatter with compression at every hop (the protocol is described in
// ring_phases.h). Per rank: p - 1 streams of about n/p elements sent, p - 1 compressions and
// p - 1 decompressions. With an absolute error bound eb the result is within (p - 1) eb of the
// exact sum (plus float32 rounding).
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/ring_phases.h"

namespace hycc::coll {
namespace {

// One segment of float32 partial sums; kept by the thread for its next call (see the buffer pool
// in ring_pipeline.cc for why).
float* partial_scratch(size_t n) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return scratch.data();
}

}  // namespace

RingReduceScatter::RingReduceScatter(Context& ctx, ConstTensorView send,
                                     std::span<const ChunkRange> chunks)
    : ctx_(ctx),
      send_(send),
      chunks_(chunks),
      partial_(partial_scratch(std::min(ctx.seg_elems, send.count))) {}

ChunkRange RingReduceScatter::chunk_at(int j) const {
  return chunks_.empty() ? chunk_range(send_.count, ctx_.size, j) : chunks_[static_cast<size_t>(j)];
}

ChunkRange RingReduceScatter::chunk(int t) const {
  return chunk_at(ring_mod(ctx_.rank - t - 2, ctx_.size));
}

ChunkRange RingReduceScatter::segment(int t, size_t k) const {
  return Segments{chunk(t).count, ctx_.seg_elems}[k];
}

size_t RingReduceScatter::first_segments() const {
  const ChunkRange c = chunk_at(ring_mod(ctx_.rank - 1, ctx_.size));
  return Segments{c.count, ctx_.seg_elems}.count();
}

size_t RingReduceScatter::recv_segments(int t) const {
  return Segments{chunk(t).count, ctx_.seg_elems}.count();
}

size_t RingReduceScatter::recv_capacity(int t, size_t k) const {
  return max_compressed_bytes(ctx_.codec, wire(t), segment(t, k).count);
}

void RingReduceScatter::first(size_t k, StreamBuffer& out) const {
  const ChunkRange c = chunk_at(ring_mod(ctx_.rank - 1, ctx_.size));
  const ChunkRange g = Segments{c.count, ctx_.seg_elems}[k];
  compress_into(ctx_, slice(send_, c.offset + g.offset, g.count), out,
                stream_seed(ctx_.seed, ctx_.rank, 0, k));
}

void RingReduceScatter::reduce(int t, size_t k, const StreamBuffer& in) {
  const ChunkRange c = chunk(t), g = segment(t, k);
  try {
    decode_stream_f32(ctx_, stream_view(in), wire(t), g.count, partial_);
  } catch (const Error&) {
    ctx_.errors.capture();
    std::fill_n(partial_, g.count, 0.0f);
  }
  add_f32(partial_, send_, c.offset + g.offset, g.count);
}

void RingReduceScatter::send_on(int t, size_t k, StreamBuffer& out) const {
  const ChunkRange g = segment(t, k);
  compress_into(ctx_, ConstTensorView{DType::kF32, g.count, partial_}, out,
                stream_seed(ctx_.seed, ctx_.rank, static_cast<uint64_t>(t) + 1, k));
}

void reduce_scatter_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op,
                         std::span<const ChunkRange> chunks, int average_over) {
  RingReduceScatter rs(ctx, send, chunks);
  const int last = rs.steps() - 1;
  RingSchedule schedule{
      .steps = rs.steps(),
      .first_segments = rs.first_segments(),
      .recv_segments = [&](int t) { return rs.recv_segments(t); },
      .recv_capacity = [&](int t, size_t k) { return rs.recv_capacity(t, k); },
      .first = [&](size_t k, StreamBuffer& out) { rs.first(k, out); },
      .arrived =
          [&](int t, size_t k, StreamBuffer& in, StreamBuffer& out) {
            rs.reduce(t, k, in);
            if (t < last) {
              rs.send_on(t, k, out);
            } else {
              // In place, recv is this rank's chunk of send: segment k was last read above.
              const ChunkRange g = rs.segment(t, k);
              store_result(rs.partial(), g.count, op, average_over > 0 ? average_over : ctx.size,
                           recv, g.offset);
            }
          },
  };
  run_ring(ctx, schedule);
}

}  // namespace hycc::coll
