// Ring allreduce: the compressed ring reduce-scatter (reduce_scatter_ring.cc), then the owner of
// each reduced chunk rounds it once into the dtype (averaging first), compresses it once and the
// ring allgather (allgather_ring.cc) forwards those bytes unchanged. The owner keeps the decoded
// value of what it sent, so all ranks hold bit-identical results.
//
// Per rank: 2 (p - 1) streams of about n/p elements sent (float32 partial sums in the first
// half), p compressions, 2 (p - 1) decompressions (+1 with a lossy codec). Error with an
// absolute bound eb: (p - 1) eb from the reduce-scatter plus eb from the allgather, plus the
// rounding of the float32 sum into the dtype.
#include <vector>

#include "coll/algorithms.h"

namespace hycc::coll {

void allreduce_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op) {
  const size_t n = send.count;
  std::vector<float> sum;
  ring_reduce_scatter_f32(ctx, send, sum);
  // From here on only recv is written; in place, send is not read any more.
  const ChunkRange mine = chunk_range(n, ctx.size, ctx.rank);
  const TensorView own = slice(recv, mine.offset, mine.count);
  store_result(sum.data(), mine.count, op, ctx.size, own, 0);
  std::vector<TensorView> blocks(static_cast<size_t>(ctx.size));
  for (int j = 0; j < ctx.size; ++j) {
    const ChunkRange c = chunk_range(n, ctx.size, j);
    blocks[static_cast<size_t>(j)] = slice(recv, c.offset, c.count);
  }
  ring_allgather_compressed(ctx, own, blocks);
}

}  // namespace hycc::coll
