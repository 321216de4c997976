// Ring allgather of compressed blocks.
//
// Rank j compresses its block once (segment by segment) and replaces its own copy by the decoded
// stream. At step s = 0 .. p-2 rank r sends the streams of block (r - s) mod p to rank r + 1 and
// receives those of block (r - s - 1) mod p from rank r - 1, decodes them into place and forwards
// the same bytes at step s + 1. Every rank decodes the bytes its owner produced, so all copies
// of a block are bit-identical. Per rank: (p - 1) compressed blocks sent, 1 compression, p - 1
// decompressions (p with a lossy codec: the owner decodes its own stream). Error: one
// compression, |x - x'| <= eb for an absolute bound eb.
#include <utility>
#include <vector>

#include "coll/algorithms.h"

namespace hycc::coll {
namespace {

// Seed phase of allgather streams (reduce-scatter phases are the step numbers 0 .. p-2).
constexpr uint64_t kAllgatherPhase = uint64_t{1} << 32;

int ring_mod(int a, int p) { return ((a % p) + p) % p; }

}  // namespace

void ring_allgather_compressed(Context& ctx, ConstTensorView own,
                               std::span<const TensorView> blocks) {
  const int p = ctx.size, r = ctx.rank;
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  const TensorView mine = blocks[static_cast<size_t>(r)];
  std::vector<std::vector<std::byte>> fwd;  // the streams this step sends
  std::vector<std::vector<std::byte>> in;   // the streams this step receives
  for (int s = 0; s < p - 1; ++s) {
    const TensorView sb = blocks[static_cast<size_t>(ring_mod(r - s, p))];
    const TensorView rb = blocks[static_cast<size_t>(ring_mod(r - s - 1, p))];
    const Segments ss{sb.count, ctx.seg_elems}, rs{rb.count, ctx.seg_elems};
    if (s == 0) fwd.resize(ss.count());
    exchange(
        ctx, right, ss.count(),
        [&](size_t k) -> std::span<const std::byte> {
          if (s > 0) return fwd[k];  // forwarded unchanged
          const ChunkRange g = ss[k];
          const size_t bytes = compress_into(ctx.codec, slice(own, g.offset, g.count), fwd[k],
                                             stream_seed(ctx.seed, r, kAllgatherPhase, k));
          const std::span<const std::byte> stream(fwd[k].data(), bytes);
          adopt_own_stream(ctx.codec, stream, slice(own, g.offset, g.count),
                           slice(mine, g.offset, g.count));
          return stream;
        },
        left, rs.count(),
        [&](size_t k) { return max_compressed_bytes(ctx.codec, rb.dtype, rs[k].count); },
        [&](size_t k) { decode_stream(in[k], slice(rb, rs[k].offset, rs[k].count)); }, in);
    std::swap(fwd, in);
  }
}

void allgather_ring(Context& ctx, ConstTensorView send, TensorView recv) {
  std::vector<TensorView> blocks(static_cast<size_t>(ctx.size));
  for (int j = 0; j < ctx.size; ++j) {
    blocks[static_cast<size_t>(j)] = slice(recv, static_cast<size_t>(j) * send.count, send.count);
  }
  ring_allgather_compressed(ctx, send, blocks);
}

}  // namespace hycc::coll
