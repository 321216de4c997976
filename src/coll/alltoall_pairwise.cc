// Pairwise-exchange alltoall. This rank's own block is copied; then at step s = 1 .. p-1 rank r
// compresses block (r + s) mod p and sends it to that rank while it receives block (r - s) mod p
// from that rank and decodes it, segment by segment (exchange() overlaps the compression of
// segment k + 1 with the transfer of segment k). In place, the send data is copied first
// (a block received at step s would otherwise overwrite one still to be sent at step p - s).
//
// Per rank: p - 1 compressed blocks of n/p elements sent, p - 1 compressions, p - 1
// decompressions. Error: one compression per block; the own block is exact.
#include <cstring>
#include <vector>

#include "coll/algorithms.h"
#include "coll/ring_pipeline.h"

namespace hycc::coll {

void alltoall_pairwise(Context& ctx, ConstTensorView send, TensorView recv) {
  const int p = ctx.size, r = ctx.rank;
  const size_t block = send.count / static_cast<size_t>(p);
  std::vector<std::byte> copy;
  ConstTensorView from = send;
  if (send.data == recv.data) {
    copy.resize(send.bytes());
    std::memcpy(copy.data(), send.data, send.bytes());
    from.data = copy.data();
  }
  const auto at = [block](int j) { return static_cast<size_t>(j) * block; };
  copy_view(slice(from, at(r), block), slice(recv, at(r), block));

  const Segments segs{block, ctx.seg_elems};
  std::vector<std::vector<std::byte>> out(segs.count());
  std::vector<StreamBuffer> in;
  for (int s = 1; s < p; ++s) {
    const int dest = (r + s) % p, source = (r - s + p) % p;
    exchange(
        ctx, dest, segs.count(),
        [&](size_t k) {
          const ChunkRange g = segs[k];
          const size_t bytes = compress_into(ctx, slice(from, at(dest) + g.offset, g.count), out[k],
                                             stream_seed(ctx.seed, r, static_cast<uint64_t>(s), k));
          return std::span<const std::byte>(out[k].data(), bytes);
        },
        source, segs.count(),
        [&](size_t k) { return max_compressed_bytes(ctx.codec, send.dtype, segs[k].count); },
        [&](size_t k) {
          decode_stream(ctx, stream_view(in[k]),
                        slice(recv, at(source) + segs[k].offset, segs[k].count));
        },
        in);
  }
}

}  // namespace hycc::coll
