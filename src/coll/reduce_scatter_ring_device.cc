// Ring reduce-scatter on device buffers: reduce_scatter_ring.cc's protocol (ring_phases.h) with
// device payloads. Step 0 sends this rank's elements in their dtype, later steps float32
// partial sums; each hop decodes, adds and re-encodes (DeviceOps::hop: one kernel for the casts;
// decode_accumulate then an encode for the other codecs), and the last hop decodes, adds and
// rounds once into the output (round_into).
#include <algorithm>

#include "coll/ring_phases_device.h"

namespace hycc::coll::device {

DeviceReduceScatter::DeviceReduceScatter(DeviceContext& ctx, ConstTensorView send)
    : ctx_(ctx),
      send_(send),
      partial_(ctx.ops.allocate(std::min(ctx.seg_elems, send.count) * sizeof(float))) {}

ChunkRange DeviceReduceScatter::chunk(int t) const {
  return chunk_range(send_.count, ctx_.size, ring_mod(ctx_.rank - t - 2, ctx_.size));
}

ChunkRange DeviceReduceScatter::segment(int t, size_t k) const {
  return Segments{chunk(t).count, ctx_.seg_elems}[k];
}

size_t DeviceReduceScatter::first_segments() const {
  const ChunkRange c = chunk_range(send_.count, ctx_.size, ring_mod(ctx_.rank - 1, ctx_.size));
  return Segments{c.count, ctx_.seg_elems}.count();
}

size_t DeviceReduceScatter::recv_segments(int t) const {
  return Segments{chunk(t).count, ctx_.seg_elems}.count();
}

size_t DeviceReduceScatter::recv_capacity(int t, size_t k) const {
  return ctx_.codec.codec().max_payload_bytes(wire(t), segment(t, k).count);
}

size_t DeviceReduceScatter::max_payload() const {
  const size_t largest = chunk_range(send_.count, ctx_.size, 0).count;  // chunk 0 is the largest
  return std::max(payload_bound(ctx_.codec, send_.dtype, largest, ctx_.seg_elems),
                  payload_bound(ctx_.codec, DType::kF32, largest, ctx_.seg_elems));
}

void DeviceReduceScatter::first(size_t k, Payload& out) const {
  const ChunkRange c = chunk_range(send_.count, ctx_.size, ring_mod(ctx_.rank - 1, ctx_.size));
  const ChunkRange g = Segments{c.count, ctx_.seg_elems}[k];
  encode_payload(ctx_, slice(send_, c.offset + g.offset, g.count), out,
                 stream_seed(ctx_.seed, ctx_.rank, 0, k));
}

void DeviceReduceScatter::reduce(int t, size_t k, const Payload& in) {
  const ChunkRange c = chunk(t), g = segment(t, k);
  const CodecClock clock(ctx_);
  try {
    ctx_.ops.decode_accumulate(ctx_.codec, in.data(), in.size, wire(t),
                               slice(send_, c.offset + g.offset, g.count),
                               static_cast<float*>(partial_.data()));
  } catch (const Error&) {
    ctx_.errors.capture();
  }
}

void DeviceReduceScatter::send_on(int t, size_t k, Payload& out) const {
  const ChunkRange g = segment(t, k);
  encode_payload(ctx_, ConstTensorView{DType::kF32, g.count, partial_.data()}, out,
                 stream_seed(ctx_.seed, ctx_.rank, static_cast<uint64_t>(t) + 1, k));
}

void DeviceReduceScatter::hop(int t, size_t k, const Payload& in, Payload& out) {
  const ChunkRange c = chunk(t), g = segment(t, k);
  {
    const CodecClock clock(ctx_);
    size_t size = 0;
    if (ctx_.ops.hop(ctx_.codec, in.data(), in.size, wire(t),
                     slice(send_, c.offset + g.offset, g.count), out.data(), out.capacity(),
                     stream_seed(ctx_.seed, ctx_.rank, static_cast<uint64_t>(t) + 1, k), &size)) {
      out.size = size;
      out.raw_bytes = g.count * sizeof(float);
      out.rewritten();
      return;
    }
  }
  reduce(t, k, in);
  send_on(t, k, out);
}

void DeviceReduceScatter::store(int t, size_t k, ReduceOp op, TensorView out) const {
  const ChunkRange g = segment(t, k);
  ctx_.ops.round_into(static_cast<const float*>(partial_.data()), op, ctx_.size,
                      slice(out, g.offset, g.count));
}

void reduce_scatter_ring_device(DeviceContext& ctx, ConstTensorView send, TensorView recv,
                                ReduceOp op) {
  DeviceReduceScatter rs(ctx, send);
  const int last = rs.steps() - 1;
  run_device_ring(ctx, DeviceRingSchedule{
                           .steps = rs.steps(),
                           .first_segments = rs.first_segments(),
                           .recv_segments = [&](int t) { return rs.recv_segments(t); },
                           .recv_capacity = [&](int t, size_t k) { return rs.recv_capacity(t, k); },
                           .max_payload = rs.max_payload(),
                           .first = [&](size_t k, Payload& out) { rs.first(k, out); },
                           .arrived =
                               [&](int t, size_t k, Payload& in, Payload& out) {
                                 if (t < last) {
                                   rs.hop(t, k, in, out);
                                 } else {
                                   rs.reduce(t, k, in);
                                   // In place, recv is this rank's chunk of send: segment k was
                                   // last read above.
                                   rs.store(t, k, op, recv);
                                 }
                               },
                       });
}

}  // namespace hycc::coll::device
