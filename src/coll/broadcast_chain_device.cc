// Chained broadcast on device buffers: broadcast_chain.cc's protocol with device payloads. The
// root encodes segment k, replaces its own segment by the decoded payload (lossy codecs) and
// sends it to root + 1; every other rank receives segment k, decodes it into place and forwards
// the same bytes to the next rank, while later segments are on their way (receives announced
// four segments ahead). Every rank, the root included, holds the same bits.
#include <vector>

#include "coll/ring_phases_device.h"

namespace hycc::coll::device {
namespace {

constexpr size_t kRecvWindow = 4;

}  // namespace

void broadcast_chain_device(DeviceContext& ctx, TensorView buffer, int root) {
  const int p = ctx.size, r = ctx.rank;
  const int position = (r - root + p) % p;  // place in the chain, the root is 0
  const int prev = (r + p - 1) % p;
  const bool has_next = position + 1 < p;
  const int next = (r + 1) % p;
  const Segments segs{buffer.count, ctx.seg_elems};
  const size_t m = segs.count();
  const size_t bound = payload_bound(ctx.codec, buffer.dtype, buffer.count, ctx.seg_elems);
  Transport& transport = ctx.transport;
  PayloadPool pool(ctx.ops, bound);
  // Transport rounds (transport.h): segment k leaves chain position j in round k * p + j.
  const auto round = [&](size_t k, int from_position) {
    return static_cast<uint64_t>(k) * static_cast<uint64_t>(p) +
           static_cast<uint64_t>(from_position);
  };
  const auto send = [&](Payload&& b, size_t k) {
    ctx.counters.wire_bytes += b.size;
    ctx.counters.raw_bytes += b.raw_bytes;
    ++ctx.counters.streams;
    transport.post_send(next, std::move(b), round(k, position));
  };

  if (position == 0) {
    transport.receives_announced();
    for (size_t k = 0; k < m; ++k) {
      const TensorView part = slice(buffer, segs[k].offset, segs[k].count);
      Payload out = pool.take();
      encode_payload(ctx, part, out, stream_seed(ctx.seed, r, 0, k));
      if (!ctx.codec.lossless()) {
        const CodecClock clock(ctx);
        ctx.ops.decode(ctx.codec, out.data(), out.size, part);
      }
      send(std::move(out), k);
      transport.progress();
      transport.reclaim(pool.free(), false);
    }
  } else {
    size_t posted = 0;
    for (size_t k = 0; k < m; ++k) {
      for (; posted < m && posted < k + kRecvWindow; ++posted) {
        transport.post_recv(prev,
                            ctx.codec.codec().max_payload_bytes(buffer.dtype, segs[posted].count),
                            round(posted, position - 1));
        if (posted + 1 == m) transport.receives_announced();
      }
      Payload in = pool.take();
      transport.wait_recv(in);
      {
        const CodecClock clock(ctx);
        try {
          ctx.ops.decode(ctx.codec, in.data(), in.size,
                         slice(buffer, segs[k].offset, segs[k].count));
        } catch (const Error&) {
          ctx.errors.capture();
        }
      }
      if (has_next) {  // the same bytes, decoded or not
        in.raw_bytes = segs[k].count * dtype_size(buffer.dtype);
        send(std::move(in), k);
      } else {
        pool.give(std::move(in));
      }
      transport.reclaim(pool.free(), false);
    }
  }
  transport.finish(pool.free());
}

}  // namespace hycc::coll::device
