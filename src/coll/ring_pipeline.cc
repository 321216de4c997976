// The pipelined ring engine (see ring_pipeline.h).
//
// Receives are posted ahead in (step, segment) order, up to two steps' worth, so that a peer's
// large message finds its receive already posted. Step 0 is compressed and sent segment by
// segment; from then on every arrival immediately yields the next step's stream, which is sent
// at once.
//
// Stream buffers come from a pool that outlives the call (one per thread): the next ring reuses
// them instead of allocating them again. Allocating them per call cost up to 40% of a 64 MiB
// allreduce on the emulated cluster (docs/results.md): glibc hands such buffers back to the
// kernel when they are freed, and the next call page-faults them in and zeroes them again.
#include "coll/ring_pipeline.h"

#include <algorithm>
#include <deque>
#include <utility>

namespace hycc::coll {
namespace {

struct PostedRecv {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status{};
  bool done = false;
  StreamBuffer buffer;
};

struct PendingSend {
  MPI_Request request = MPI_REQUEST_NULL;
  StreamBuffer buffer;
};

// Free stream buffers of this thread, at most kRetainedBytes of them (the rest are freed).
class BufferPool {
 public:
  static constexpr size_t kRetainedBytes = size_t{64} << 20;

  static BufferPool& of_this_thread() {
    thread_local BufferPool pool;
    return pool;
  }
  StreamBuffer take() {
    if (free_.empty()) return {};
    StreamBuffer b = std::move(free_.back());
    free_.pop_back();
    retained_ -= b.bytes.size();
    b.size = 0;
    return b;
  }
  void give(StreamBuffer&& b) {
    if (b.bytes.empty() || retained_ + b.bytes.size() > kRetainedBytes) return;  // freed here
    retained_ += b.bytes.size();
    free_.push_back(std::move(b));
  }

 private:
  std::vector<StreamBuffer> free_;
  size_t retained_ = 0;
};

}  // namespace

void run_ring(Context& ctx, const RingSchedule& schedule) {
  const int p = ctx.size, r = ctx.rank, steps = schedule.steps;
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  std::vector<size_t> nrecv(static_cast<size_t>(steps));
  size_t widest = schedule.first_segments;
  for (int t = 0; t < steps; ++t) {
    nrecv[static_cast<size_t>(t)] = schedule.recv_segments(t);
    widest = std::max(widest, nrecv[static_cast<size_t>(t)]);
  }
  const size_t window = 2 * widest + 2;

  BufferPool& pool = BufferPool::of_this_thread();
  std::deque<PostedRecv> posted;
  int post_t = 0;  // the next receive to post: stream post_k of step post_t
  size_t post_k = 0;
  const auto post_receives = [&] {
    while (posted.size() < window && post_t < steps) {
      if (post_k == nrecv[static_cast<size_t>(post_t)]) {
        ++post_t;
        post_k = 0;
        continue;
      }
      PostedRecv& slot = posted.emplace_back();
      slot.buffer = pool.take();
      const size_t cap = schedule.recv_capacity(post_t, post_k);
      if (slot.buffer.bytes.size() < cap) slot.buffer.bytes.resize(cap);
      HYCC_CHECK_MPI(MPI_Irecv(slot.buffer.bytes.data(), mpi_count(cap, "segment bytes"), MPI_BYTE,
                               left, ctx.tag, ctx.comm, &slot.request));
      ++post_k;
    }
  };

  std::deque<PendingSend> sends;
  const auto send = [&](StreamBuffer&& b) {
    count_sent_stream(ctx, b.view());
    PendingSend& s = sends.emplace_back();
    s.buffer = std::move(b);
    HYCC_CHECK_MPI(MPI_Isend(s.buffer.bytes.data(), mpi_count(s.buffer.size, "segment bytes"),
                             MPI_BYTE, right, ctx.tag, ctx.comm, &s.request));
  };
  // Returns the buffers of completed sends to the pool (in order; enough to bound memory).
  const auto reclaim_sends = [&] {
    while (!sends.empty()) {
      int done = 0;
      HYCC_CHECK_MPI(MPI_Test(&sends.front().request, &done, MPI_STATUS_IGNORE));
      if (!done) return;
      pool.give(std::move(sends.front().buffer));
      sends.pop_front();
    }
  };
  // Lets MPI move data while this rank compresses: tests the oldest receive.
  const auto poke = [&] {
    if (posted.empty() || posted.front().done) return;
    int done = 0;
    HYCC_CHECK_MPI(MPI_Test(&posted.front().request, &done, &posted.front().status));
    posted.front().done = done != 0;
  };

  post_receives();
  for (size_t k = 0; k < schedule.first_segments; ++k) {
    StreamBuffer out = pool.take();
    schedule.first(k, out);
    send(std::move(out));
    poke();
  }
  for (int t = 0; t < steps; ++t) {
    for (size_t k = 0; k < nrecv[static_cast<size_t>(t)]; ++k) {
      PostedRecv& slot = posted.front();
      if (!slot.done) HYCC_CHECK_MPI(MPI_Wait(&slot.request, &slot.status));
      int bytes = 0;
      HYCC_CHECK_MPI(MPI_Get_count(&slot.status, MPI_BYTE, &bytes));
      slot.buffer.size = static_cast<size_t>(bytes);
      StreamBuffer out = pool.take();
      schedule.arrived(t, k, slot.buffer, out);
      if (t + 1 < steps) {
        send(std::move(out));
      } else {
        pool.give(std::move(out));
      }
      pool.give(std::move(slot.buffer));
      posted.pop_front();
      post_receives();
      reclaim_sends();
    }
  }
  for (PendingSend& s : sends) HYCC_CHECK_MPI(MPI_Wait(&s.request, MPI_STATUS_IGNORE));
}

}  // namespace hycc::coll
