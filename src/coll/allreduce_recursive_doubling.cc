// Recursive-doubling allreduce, for small messages: log2(p) exchanges of the whole message.
//
// With p2 the largest power of two <= p and e = p - p2, the first 2e ranks fold in pairs: even
// rank 2i sends its compressed input to rank 2i + 1, which adds it and takes part in the
// doubling as rank i; the others take part as rank r - e. At level d = 1, 2, 4, .. p2/2 every
// rank exchanges its compressed partial sum with partner (rank XOR d), and both compute
// decoded(own stream) + decoded(partner's stream): the same two values, added in a commutative
// float32 addition, so both hold bit-identical sums. At the end the sum is rounded once into the
// dtype and sent uncompressed to the folded ranks, so every rank holds the same bits.
// Stochastic rounding needs one more thing for that: before level d, the d ranks of a block
// (vrank / d) hold the same partial sum, and they must compress it into the same stream, so the
// seed of a level is the block's, not the rank's (with per-rank seeds the two partners of a
// block pair decoded different noise from 4 ranks on).
//
// A rank's first message is its input in the input's dtype (16-bit traffic stays 16-bit; the
// rank's own copy is then exactly that input, widened), the later ones float32 partial sums.
// Per rank: log2(p2) whole messages sent (+1 for folded pairs, +1 uncompressed result to the
// folded rank). Error with an absolute bound eb: a level doubles the error and adds 2 eb,
// E(L) = 2^L E(0) + (2^(L+1) - 2) eb with E(0) = eb after a fold, 0 otherwise: at most
// (3 p2 - 2) eb, against p eb for the ring.
#include <algorithm>
#include <vector>

#include "codec/float_io.h"
#include "coll/algorithms.h"
#include "coll/ring_pipeline.h"

namespace hycc::coll {

void allreduce_recursive_doubling(Context& ctx, ConstTensorView send, TensorView recv,
                                  ReduceOp op) {
  const int p = ctx.size, r = ctx.rank;
  const size_t n = send.count;
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const int extra = p - p2;
  const Segments segs{n, ctx.seg_elems};
  std::vector<float> acc(n);     // this rank's float32 partial sum
  std::vector<float> mine(n);    // what the partner decodes of acc
  std::vector<float> theirs(n);  // what this rank decodes of the partner's partial sum
  codec::load_as_float(send, 0, n, acc.data());
  std::vector<std::vector<std::byte>> out(segs.count());
  std::vector<StreamBuffer> in;

  // A rank's first stream is its input: sent in the input's dtype (acc is that input, widened
  // exactly), so 16-bit traffic stays 16-bit; later streams are float32 partial sums. A rank that
  // has received nothing before level 1 (no fold) still sends its input there.
  const auto wire_of = [&](int rank, uint64_t level) {
    const bool input = level == 0 ? rank % 2 == 0 : (level == 1 && rank >= 2 * extra);
    return input ? send.dtype : DType::kF32;
  };
  // Sends acc to `peer` (if `give`) and receives the peer's partial sum (if `take`). `owner`
  // names the partial sum in the stream seeds: equal on the ranks that hold the same sum.
  const auto swap_with = [&](int peer, bool give, bool take, uint64_t level, int owner) {
    const DType mine_wire = wire_of(r, level), theirs_wire = wire_of(peer, level);
    exchange(
        ctx, peer, give ? segs.count() : 0,
        [&](size_t k) {
          const ChunkRange g = segs[k];
          const ConstTensorView part =
              mine_wire == DType::kF32
                  ? ConstTensorView{DType::kF32, g.count, acc.data() + g.offset}
                  : slice(send, g.offset, g.count);
          const size_t bytes =
              compress_into(ctx, part, out[k], stream_seed(ctx.seed, owner, level, k));
          const std::span<const std::byte> stream(out[k].data(), bytes);
          if (take && mine_wire == DType::kF32) {
            adopt_own_stream(ctx, stream, part, {DType::kF32, g.count, &mine[g.offset]});
          } else if (take && ctx.codec.lossless()) {
            std::copy_n(acc.data() + g.offset, g.count, mine.data() + g.offset);
          } else if (take) {
            decode_stream_f32(ctx, stream, mine_wire, g.count, mine.data() + g.offset);
          }
          return stream;
        },
        peer, take ? segs.count() : 0,
        [&](size_t k) { return max_compressed_bytes(ctx.codec, theirs_wire, segs[k].count); },
        [&](size_t k) {
          decode_stream_f32(ctx, stream_view(in[k]), theirs_wire, segs[k].count,
                            theirs.data() + segs[k].offset);
        },
        in);
  };

  int vrank = r - extra;  // rank among the p2 ranks of the doubling
  if (r < 2 * extra) {
    if (r % 2 == 0) {  // folded out: contribute, then wait for the result
      swap_with(r + 1, true, false, 0, r);
      recv_raw(ctx, recv, r + 1);
      return;
    }
    swap_with(r - 1, false, true, 0, r);
    for (size_t i = 0; i < n; ++i) acc[i] += theirs[i];
    vrank = r / 2;
  }
  uint64_t level = 1;
  for (int d = 1; d < p2; d <<= 1, ++level) {
    const int vpeer = vrank ^ d;
    const int peer = vpeer < extra ? 2 * vpeer + 1 : vpeer + extra;
    swap_with(peer, true, true, level, vrank / d);
    for (size_t i = 0; i < n; ++i) acc[i] = mine[i] + theirs[i];
  }
  store_result(acc.data(), n, op, p, recv, 0);
  if (r < 2 * extra) send_raw(ctx, recv, r - 1);
}

}  // namespace hycc::coll
