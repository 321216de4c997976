// Ring reduce-scatter with compression at every hop.
//
// Chunk j of the tensor is chunk_range(n, p, j). At step s = 0 .. p-2 rank r sends its partial
// sum of chunk (r - s - 1) mod p to rank r + 1, receives the partial sum of chunk (r - s - 2) mod p
// from rank r - 1, decompresses it, adds its own elements in float32 and keeps that sum for step
// s + 1: decompress, reduce, recompress. The chunk received at the last step is chunk r, summed
// over all p ranks.
//
// Step 0 sends the rank's own elements in their dtype; later steps send float32 partial sums, so
// that 16-bit inputs are rounded once, at the end, never at a hop. Per rank: p - 1 streams of
// about n/p elements sent, p - 1 compressions and p - 1 decompressions. With an absolute error
// bound eb the result is within (p - 1) eb of the exact sum (plus float32 rounding).
#include <utility>
#include <vector>

#include "coll/algorithms.h"

namespace hycc::coll {
namespace {

int ring_mod(int a, int p) { return ((a % p) + p) % p; }

}  // namespace

void ring_reduce_scatter_f32(Context& ctx, ConstTensorView send, std::vector<float>& chunk_sum) {
  const int p = ctx.size, r = ctx.rank;
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  const size_t n = send.count;
  std::vector<float> partial;  // the float32 partial sum this step sends (steps >= 1)
  std::vector<float> next;     // the partial sum this step receives and completes
  std::vector<std::vector<std::byte>> out, in;
  for (int s = 0; s < p - 1; ++s) {
    const ChunkRange sc = chunk_range(n, p, ring_mod(r - s - 1, p));
    const ChunkRange rc = chunk_range(n, p, ring_mod(r - s - 2, p));
    const Segments ss{sc.count, ctx.seg_elems}, rs{rc.count, ctx.seg_elems};
    const DType wire = s == 0 ? send.dtype : DType::kF32;
    const ConstTensorView outgoing = s == 0
                                         ? slice(send, sc.offset, sc.count)
                                         : ConstTensorView{DType::kF32, sc.count, partial.data()};
    out.resize(ss.count());
    next.resize(rc.count);
    exchange(
        ctx, right, ss.count(),
        [&](size_t k) {  // compress segment k of our partial sum
          const ChunkRange g = ss[k];
          const size_t bytes = compress_into(ctx.codec, slice(outgoing, g.offset, g.count), out[k],
                                             stream_seed(ctx.seed, r, static_cast<uint64_t>(s), k));
          return std::span<const std::byte>(out[k].data(), bytes);
        },
        left, rs.count(),
        [&](size_t k) { return max_compressed_bytes(ctx.codec, wire, rs[k].count); },
        [&](size_t k) {  // decompress the left neighbour's partial sum and add ours
          const ChunkRange g = rs[k];
          decode_stream_f32(in[k], wire, g.count, next.data() + g.offset);
          add_f32(next.data() + g.offset, send, rc.offset + g.offset, g.count);
        },
        in);
    std::swap(partial, next);
  }
  chunk_sum = std::move(partial);
}

void reduce_scatter_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op) {
  std::vector<float> sum;
  ring_reduce_scatter_f32(ctx, send, sum);
  // In place, recv is our chunk of send: it was last read at the final step, above.
  store_result(sum.data(), recv.count, op, ctx.size, recv, 0);
}

}  // namespace hycc::coll
