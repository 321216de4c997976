// The pipelined ring of the host ring algorithms (reduce-scatter, allgather, allreduce): the ring
// engine of the device algorithms (device_ring.h) with streams in host memory and the MPI
// transport (comm/transport.h), so that host and device rings share one schedule and one engine.
//
// A ring of T steps: at step t every rank sends segmented streams to rank + 1 and receives as
// many from rank - 1. Stream k of step t + 1 is made from stream k of step t as soon as it has
// arrived (decompress, reduce, recompress; or forward the bytes), not when the whole step has
// arrived, so a segment travels around the ring on its own and the link never waits for the
// end of a step.
#pragma once

#include <cstddef>
#include <span>

#include "coll/coll_internal.h"
#include "coll/device_ring.h"

namespace hycc::coll {

// A whole codec stream (header included) in bytes [0, size) of a host payload.
using StreamBuffer = ::hycc::device::Payload;
inline std::span<const std::byte> stream_view(const StreamBuffer& b) {
  return {static_cast<const std::byte*>(b.data()), b.size};
}

// Steps, segments, receive capacities and the callbacks that make and consume streams
// (device_ring.h). A malformed stream must not stop the ring: capture the error in ctx.errors
// and still make the outgoing stream. max_payload may be 0: the largest receive capacity.
using RingSchedule = device::DeviceRingSchedule;

// Runs the schedule with the left and right neighbours of ctx.rank. Returns when every stream
// of this rank has been sent and received.
void run_ring(Context& ctx, const RingSchedule& schedule);

}  // namespace hycc::coll
