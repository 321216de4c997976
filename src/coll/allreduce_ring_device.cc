// Ring allreduce on device buffers: allreduce_ring.cc's single ring of 2 (p - 1) steps (the
// compressed reduce-scatter, then the allgather of chunks compressed once), with device
// payloads. As soon as segment k of this rank's chunk is fully reduced it is rounded once into
// the dtype (averaged first) on the device, encoded and sent round the allgather.
#include <algorithm>
#include <vector>

#include "coll/ring_phases_device.h"

namespace hycc::coll::device {

void allreduce_ring_device(DeviceContext& ctx, ConstTensorView send, TensorView recv, ReduceOp op) {
  const size_t n = send.count;
  const ChunkRange mine = chunk_range(n, ctx.size, ctx.rank);
  const TensorView own = slice(recv, mine.offset, mine.count);
  const std::vector<TensorView> blocks = chunk_views(recv, ctx.size);
  DeviceReduceScatter rs(ctx, send);
  DeviceAllgather ag(ctx, own, blocks);
  const int half = rs.steps();  // steps [0, half) reduce, [half, 2 half) gather
  // In place, recv is send: as on the host, a segment of chunk r is written only after it was
  // last read, and other chunks only by allgather steps.
  run_device_ring(
      ctx,
      DeviceRingSchedule{
          .steps = 2 * half,
          .first_segments = rs.first_segments(),
          .recv_segments =
              [&](int t) { return t < half ? rs.recv_segments(t) : ag.recv_segments(t - half); },
          .recv_capacity =
              [&](int t, size_t k) {
                return t < half ? rs.recv_capacity(t, k) : ag.recv_capacity(t - half, k);
              },
          .max_payload = std::max(rs.max_payload(), ag.max_payload()),
          .first = [&](size_t k, Payload& out) { rs.first(k, out); },
          .arrived =
              [&](int t, size_t k, Payload& in, Payload& out) {
                if (t >= half) {
                  ag.arrived(t - half, k, in, out);
                  return;
                }
                if (t + 1 < half) {
                  rs.hop(t, k, in, out);
                  return;
                }
                rs.reduce(t, k, in);
                rs.store(t, k, op, own);
                ag.first(k, out);
              },
      });
}

}  // namespace hycc::coll::device
