// The pipelined device ring (device_ring.h). Receives are announced ahead in (step, segment)
// order, up to two steps' worth, as in ring_pipeline.cc. Step 0 is encoded and sent segment by
// segment: the transport sends payload k (an MPI_Isend from pinned memory, or an NCCL round)
// while payload k + 1 is encoded into the other buffer, so that compressing one segment overlaps
// the transfer of the previous one. From then on every arrival yields the next step's payload,
// which is sent at once. Payload buffers are recycled through a free list: a call holds as many
// as it has transfers in flight, plus two.
#include "coll/device_ring.h"

#include <algorithm>
#include <utility>

namespace hycc::coll::device {
namespace {

// The transport round of payload k of step t (transport.h): the same on the sender and the
// receiver, increasing in (t, k).
uint64_t ring_round(int t, size_t k) { return (static_cast<uint64_t>(t) << 40) | k; }

}  // namespace

void encode_payload(DeviceContext& ctx, ConstTensorView in, Payload& out, uint64_t seed) {
  const CodecClock clock(ctx);
  out.size = ctx.ops.encode(ctx.codec, in, out.data(), out.capacity(), seed);
  out.raw_bytes = in.bytes();
  out.rewritten();
}

Payload PayloadPool::take() {
  Payload b;
  if (!free_.empty()) {
    b = std::move(free_.back());
    free_.pop_back();
  }
  if (!holds_payload(b, bound_)) b.memory = allocate_payload(ops_, bound_);
  b.size = b.raw_bytes = 0;
  b.rewritten();
  return b;
}

size_t payload_bound(const CodecConfig& codec, DType dtype, size_t count, size_t seg_elems) {
  return codec.codec().max_payload_bytes(dtype, std::min(count, seg_elems));
}

void run_device_ring(DeviceContext& ctx, const DeviceRingSchedule& schedule) {
  const int p = ctx.size, r = ctx.rank, steps = schedule.steps;
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  std::vector<size_t> nrecv(static_cast<size_t>(steps));
  size_t widest = schedule.first_segments;
  for (int t = 0; t < steps; ++t) {
    nrecv[static_cast<size_t>(t)] = schedule.recv_segments(t);
    widest = std::max(widest, nrecv[static_cast<size_t>(t)]);
  }
  const size_t window = 2 * widest + 2;
  Transport& transport = ctx.transport;

  size_t bound = schedule.max_payload;
  if (bound == 0) {  // the largest receive capacity
    for (int t = 0; t < steps; ++t) {
      for (size_t k = 0; k < nrecv[static_cast<size_t>(t)]; ++k) {
        bound = std::max(bound, schedule.recv_capacity(t, k));
      }
    }
  }
  PayloadPool pool(ctx.ops, bound);

  size_t posted = 0;
  int post_t = 0;  // the next receive to announce: payload post_k of step post_t
  size_t post_k = 0;
  bool announced_all = false;
  const auto post_receives = [&] {
    while (posted < window && post_t < steps) {
      if (post_k == nrecv[static_cast<size_t>(post_t)]) {
        ++post_t;
        post_k = 0;
        continue;
      }
      transport.post_recv(left, schedule.recv_capacity(post_t, post_k), ring_round(post_t, post_k));
      ++posted;
      ++post_k;
    }
    if (post_t == steps && !announced_all) {
      transport.receives_announced();
      announced_all = true;
    }
  };
  const auto send = [&](Payload&& b, int t, size_t k) {
    ctx.counters.wire_bytes += b.size;
    ctx.counters.raw_bytes += b.raw_bytes;
    ++ctx.counters.streams;
    transport.post_send(right, std::move(b), ring_round(t, k));
  };

  post_receives();
  for (size_t k = 0; k < schedule.first_segments; ++k) {
    Payload out = pool.take();
    schedule.first(k, out);
    send(std::move(out), 0, k);
    transport.progress();
    transport.reclaim(pool.free(), false);
  }
  for (int t = 0; t < steps; ++t) {
    for (size_t k = 0; k < nrecv[static_cast<size_t>(t)]; ++k) {
      Payload in = pool.take();
      transport.wait_recv(in);
      --posted;
      Payload out = pool.take();
      schedule.arrived(t, k, in, out);
      if (t + 1 < steps) {
        send(std::move(out), t + 1, k);
      } else {
        pool.give(std::move(out));
      }
      pool.give(std::move(in));
      post_receives();
      transport.reclaim(pool.free(), false);
    }
  }
  transport.finish(pool.free());
}

}  // namespace hycc::coll::device
