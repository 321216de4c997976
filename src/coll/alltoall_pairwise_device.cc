// Pairwise-exchange alltoall on device buffers: alltoall_pairwise.cc's schedule with device
// payloads. The own block is copied; at step s = 1 .. p-1 rank r encodes block (r + s) mod p
// segment by segment and sends it to that rank while it receives block (r - s) mod p from that
// rank and decodes it, one segment behind (the transfer of segment k overlaps the encoding of
// segment k + 1; receives are announced four segments ahead). Same seeds as the host, so the
// same bits. In place, the send data is copied first.
#include <algorithm>
#include <vector>

#include "coll/ring_phases_device.h"

namespace hycc::coll::device {
namespace {

constexpr size_t kRecvWindow = 4;

// The transport round of segment k of step s (transport.h), the same at both ends.
uint64_t pairwise_round(int s, size_t k) { return (static_cast<uint64_t>(s) << 40) | k; }

}  // namespace

void alltoall_pairwise_device(DeviceContext& ctx, ConstTensorView send, TensorView recv) {
  const int p = ctx.size, r = ctx.rank;
  const size_t block = send.count / static_cast<size_t>(p);
  const size_t esize = dtype_size(send.dtype);
  ConstTensorView from = send;
  Memory copy;
  if (send.data == recv.data) {
    copy = ctx.ops.allocate(send.bytes());
    ctx.ops.copy_device(copy.data(), send.data, send.bytes());
    from.data = copy.data();
  }
  const auto at = [block](int j) { return static_cast<size_t>(j) * block; };
  ctx.ops.copy_device(slice(recv, at(r), block).data, slice(from, at(r), block).data,
                      block * esize);

  const Segments segs{block, ctx.seg_elems};
  const size_t m = segs.count();
  const size_t bound = payload_bound(ctx.codec, send.dtype, block, ctx.seg_elems);
  Transport& transport = ctx.transport;
  PayloadPool pool(ctx.ops, bound);
  // Receives announced in (step, segment) order, up to kRecvWindow ahead of the one decoded.
  int post_s = 1;
  size_t post_k = 0, announced = 0, waited = 0;
  bool all_announced = false;
  const auto announce = [&] {
    while (post_s < p && announced < waited + kRecvWindow) {
      if (post_k == m) {
        ++post_s;
        post_k = 0;
        continue;
      }
      transport.post_recv((r - post_s + p) % p,
                          ctx.codec.codec().max_payload_bytes(send.dtype, segs[post_k].count),
                          pairwise_round(post_s, post_k));
      ++post_k;
      ++announced;
    }
    if (post_s == p && !all_announced) {
      transport.receives_announced();
      all_announced = true;
    }
  };
  Payload in = pool.take();
  const auto receive = [&](int s, size_t k) {
    const int source = (r - s + p) % p;
    transport.wait_recv(in);
    ++waited;
    announce();
    const CodecClock clock(ctx);
    try {
      ctx.ops.decode(ctx.codec, in.data(), in.size,
                     slice(recv, at(source) + segs[k].offset, segs[k].count));
    } catch (const Error&) {
      ctx.errors.capture();
    }
  };

  announce();
  for (int s = 1; s < p; ++s) {
    const int dest = (r + s) % p;
    for (size_t k = 0; k < m; ++k) {
      Payload out = pool.take();
      encode_payload(ctx, slice(from, at(dest) + segs[k].offset, segs[k].count), out,
                     stream_seed(ctx.seed, r, static_cast<uint64_t>(s), k));
      ctx.counters.wire_bytes += out.size;
      ctx.counters.raw_bytes += out.raw_bytes;
      ++ctx.counters.streams;
      transport.post_send(dest, std::move(out), pairwise_round(s, k));
      transport.progress();
      if (k > 0) receive(s, k - 1);
      transport.reclaim(pool.free(), false);
    }
    if (m > 0) receive(s, m - 1);
  }
  transport.finish(pool.free());
}

}  // namespace hycc::coll::device
