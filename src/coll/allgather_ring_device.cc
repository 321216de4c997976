// Ring allgather on device buffers: allgather_ring.cc's protocol (ring_phases.h) with device
// payloads. The owner encodes each segment once and replaces its own copy by the decoded
// payload (lossy codecs), every other rank decodes the same bytes, which are forwarded
// unchanged, so all copies are bit-identical.
#include <utility>

#include "coll/ring_phases_device.h"

namespace hycc::coll::device {
namespace {

// Seed phase of allgather payloads (allgather_ring.cc's kAllgatherPhase).
constexpr uint64_t kAllgatherPhase = uint64_t{1} << 32;

}  // namespace

DeviceAllgather::DeviceAllgather(DeviceContext& ctx, ConstTensorView own,
                                 std::span<const TensorView> blocks)
    : ctx_(ctx), own_(own), blocks_(blocks) {}

TensorView DeviceAllgather::block(int s) const {
  return blocks_[static_cast<size_t>(ring_mod(ctx_.rank - s - 1, ctx_.size))];
}

size_t DeviceAllgather::first_segments() const {
  return Segments{own_.count, ctx_.seg_elems}.count();
}

size_t DeviceAllgather::recv_segments(int s) const {
  return Segments{block(s).count, ctx_.seg_elems}.count();
}

size_t DeviceAllgather::recv_capacity(int s, size_t k) const {
  const TensorView b = block(s);
  return ctx_.codec.codec().max_payload_bytes(b.dtype, Segments{b.count, ctx_.seg_elems}[k].count);
}

size_t DeviceAllgather::max_payload() const {
  size_t largest = 0;
  for (const TensorView& b : blocks_) largest = std::max(largest, b.count);
  return payload_bound(ctx_.codec, own_.dtype, largest, ctx_.seg_elems);
}

void DeviceAllgather::first(size_t k, Payload& out) const {
  const ChunkRange g = Segments{own_.count, ctx_.seg_elems}[k];
  const ConstTensorView in = slice(own_, g.offset, g.count);
  encode_payload(ctx_, in, out, stream_seed(ctx_.seed, ctx_.rank, kAllgatherPhase, k));
  const TensorView mine = slice(blocks_[static_cast<size_t>(ctx_.rank)], g.offset, g.count);
  const CodecClock clock(ctx_);
  if (ctx_.codec.lossless()) {
    ctx_.ops.copy_device(mine.data, in.data, in.bytes());
  } else {
    ctx_.ops.decode(ctx_.codec, out.data(), out.size, mine);
  }
}

void DeviceAllgather::arrived(int s, size_t k, Payload& in, Payload& out) const {
  const TensorView b = block(s);
  const ChunkRange g = Segments{b.count, ctx_.seg_elems}[k];
  {
    const CodecClock clock(ctx_);
    try {
      ctx_.ops.decode(ctx_.codec, in.data(), in.size, slice(b, g.offset, g.count));
    } catch (const Error&) {
      ctx_.errors.capture();
    }
  }
  if (s + 1 < steps()) {  // forwarded unchanged
    in.raw_bytes = g.count * dtype_size(b.dtype);
    std::swap(in, out);
  }
}

void allgather_ring_device(DeviceContext& ctx, ConstTensorView send, TensorView recv) {
  const std::vector<TensorView> blocks = block_views(recv, ctx.size, send.count);
  DeviceAllgather ag(ctx, send, blocks);
  run_device_ring(ctx, DeviceRingSchedule{
                           .steps = ag.steps(),
                           .first_segments = ag.first_segments(),
                           .recv_segments = [&](int s) { return ag.recv_segments(s); },
                           .recv_capacity = [&](int s, size_t k) { return ag.recv_capacity(s, k); },
                           .max_payload = ag.max_payload(),
                           .first = [&](size_t k, Payload& out) { ag.first(k, out); },
                           .arrived = [&](int s, size_t k, Payload& in,
                                          Payload& out) { ag.arrived(s, k, in, out); },
                       });
}

}  // namespace hycc::coll::device
