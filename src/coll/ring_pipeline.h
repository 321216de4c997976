// The pipelined ring shared by the ring algorithms (reduce-scatter, allgather, allreduce).
//
// A ring of T steps: at step t every rank sends segmented streams to rank + 1 and receives as
// many from rank - 1. Stream k of step t + 1 is made from stream k of step t as soon as it has
// arrived (decompress, reduce, recompress; or forward the bytes), not when the whole step has
// arrived, so a segment travels around the ring on its own and the link never waits for the
// end of a step. Sends and receives are matched in (step, segment) order on one tag: each rank
// posts its sends in that order and its receives in that order, and MPI does not reorder
// messages between two ranks on one tag.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "coll/coll_internal.h"

namespace hycc::coll {

// A reusable stream buffer: bytes [0, size) hold the stream, and `bytes` keeps its length (the
// capacity) between uses, so buffers are not cleared again for every segment.
struct StreamBuffer {
  std::vector<std::byte> bytes;
  size_t size = 0;
  std::span<const std::byte> view() const { return {bytes.data(), size}; }
};

struct RingSchedule {
  int steps = 0;  // T >= 1
  // Streams sent at step 0.
  size_t first_segments = 0;
  // Streams received at step t (as many are sent at step t + 1).
  std::function<size_t(int t)> recv_segments;
  // Receive capacity (bytes) of stream k of step t: an upper bound of its size.
  std::function<size_t(int t, size_t k)> recv_capacity;
  // Makes stream k of step 0 in `out`.
  std::function<void(size_t k, StreamBuffer& out)> first;
  // Stream k of step t has arrived in `in`. Consumes it and, when t + 1 < steps, makes stream k
  // of step t + 1 in `out` (std::swap(in, out) forwards the bytes unchanged). A malformed stream
  // must not stop the ring: capture the error in ctx.errors and still make the outgoing stream.
  std::function<void(int t, size_t k, StreamBuffer& in, StreamBuffer& out)> arrived;
};

// Runs the schedule with the left and right neighbours of ctx.rank. Returns when every stream
// of this rank has been sent and received.
void run_ring(Context& ctx, const RingSchedule& schedule);

}  // namespace hycc::coll
