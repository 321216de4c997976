// Ring allreduce: the compressed ring reduce-scatter, then the ring allgather of chunks
// compressed once (ring_phases.h), run as one pipelined ring of 2 (p - 1) steps. As soon as
// segment k of this rank's chunk is fully reduced, it is rounded once into the dtype (averaged
// first), compressed and sent round the allgather, while later segments are still being
// reduced. The owner keeps the decoded value of what it sent, so all ranks hold bit-identical
// results.
//
// Per rank: 2 (p - 1) streams of about n/p elements sent (float32 partial sums in the first
// half), p compressions, 2 (p - 1) decompressions (+1 with a lossy codec). Error with an
// absolute bound eb: (p - 1) eb from the reduce-scatter plus eb from the allgather, plus the
// rounding of the float32 sum into the dtype. send may be float32 partial sums of recv's dtype
// (the two-level allreduce's node sums): the sum is rounded once, into recv's dtype.
#include <vector>

#include "coll/algorithms.h"
#include "coll/ring_phases.h"

namespace hycc::coll {

void allreduce_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op,
                    int average_over) {
  const size_t n = send.count;
  const ChunkRange mine = chunk_range(n, ctx.size, ctx.rank);
  const TensorView own = slice(recv, mine.offset, mine.count);
  const std::vector<TensorView> blocks = chunk_views(recv, ctx.size);
  RingReduceScatter rs(ctx, send);
  RingAllgather ag(ctx, own, blocks);
  const int half = rs.steps();  // steps [0, half) reduce, [half, 2 half) gather
  // In place, recv is send: a segment of chunk r is written only after it was last read (the
  // last reduce-scatter step), and other chunks of recv only by allgather steps, which follow
  // every reduce-scatter step.
  run_ring(ctx, RingSchedule{
                    .steps = 2 * half,
                    .first_segments = rs.first_segments(),
                    .recv_segments =
                        [&](int t) {
                          return t < half ? rs.recv_segments(t) : ag.recv_segments(t - half);
                        },
                    .recv_capacity =
                        [&](int t, size_t k) {
                          return t < half ? rs.recv_capacity(t, k) : ag.recv_capacity(t - half, k);
                        },
                    .first = [&](size_t k, StreamBuffer& out) { rs.first(k, out); },
                    .arrived =
                        [&](int t, size_t k, StreamBuffer& in, StreamBuffer& out) {
                          if (t >= half) {
                            ag.arrived(t - half, k, in, out);
                            return;
                          }
                          rs.reduce(t, k, in);
                          if (t + 1 < half) {
                            rs.send_on(t, k, out);
                            return;
                          }
                          const ChunkRange g = rs.segment(t, k);
                          store_result(rs.partial(), g.count, op,
                                       average_over > 0 ? average_over : ctx.size, own, g.offset);
                          ag.first(k, out);
                        },
                });
}

}  // namespace hycc::coll
