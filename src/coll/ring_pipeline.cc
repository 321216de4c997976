// The host ring (ring_pipeline.h): the device ring engine on host memory and the MPI transport.
//
// Stream buffers come from the host operations' block cache, which outlives the call: the next
// ring reuses them instead of allocating them again (device/host_device_ops.cc).
#include "coll/ring_pipeline.h"

#include <memory>

#include "comm/transport.h"

namespace hycc::coll {

void run_ring(Context& ctx, const RingSchedule& schedule) {
  ::hycc::device::DeviceOps& ops = ::hycc::device::host_ops();
  const std::unique_ptr<comm::Transport> transport = host_transport(ctx, ops);
  device::DeviceContext engine{.rank = ctx.rank,
                               .size = ctx.size,
                               .codec = ctx.codec,
                               .seg_elems = ctx.seg_elems,
                               .seed = ctx.seed,
                               .ops = ops,
                               .transport = *transport,
                               .errors = {},
                               .counters = {}};
  device::run_device_ring(engine, schedule);
  ctx.counters.raw_bytes += engine.counters.raw_bytes;
  ctx.counters.wire_bytes += engine.counters.wire_bytes;
  ctx.counters.streams += engine.counters.streams;
}

}  // namespace hycc::coll
