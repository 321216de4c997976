// Compress-once allreduce, for payloads that compress very well (sparse, low-rank): every rank
// compresses its whole input once (segment by segment, the streams back to back), the streams
// are allgathered (sizes first with MPI_Allgather, then MPI_Allgatherv of the bytes), and every
// rank decodes all p inputs and sums them in rank order in float32, rounding once. Every rank
// decodes the same bytes in the same order, so all hold bit-identical results.
//
// Per rank: its compressed input sent to p - 1 ranks (the MPI allgather's pattern), 1
// compression, p decompressions. Error with an absolute bound eb: p eb (each input compressed
// once). Not pipelined: the allgather starts after the last segment is compressed. The gathered
// streams must fit in INT_MAX bytes (MPI counts), otherwise every rank throws InvalidArgument.
#include <climits>
#include <vector>

#include "coll/algorithms.h"

namespace hycc::coll {

void allreduce_compress_once(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op) {
  if (ctx.group != nullptr) {  // every rank of the group throws alike
    throw InvalidArgument(tagged("coll",
                                 "compress_once allreduce runs on MPI only (MPI_Allgatherv);",
                                 " use the ring or recursive doubling on this communicator"));
  }
  const int p = ctx.size;
  const size_t n = send.count;
  const Segments segs{n, ctx.seg_elems};

  size_t bound = 0;
  for (size_t k = 0; k < segs.count(); ++k) {
    bound += max_compressed_bytes(ctx.codec, send.dtype, segs[k].count);
  }
  std::vector<std::byte> mine(bound);
  size_t used = 0;
  for (size_t k = 0; k < segs.count(); ++k) {
    const ChunkRange g = segs[k];
    const CodecClock clock(ctx);
    const size_t bytes = compress(ctx.codec, slice(send, g.offset, g.count),
                                  std::span<std::byte>(mine).subspan(used),
                                  CompressOptions{stream_seed(ctx.seed, ctx.rank, 0, k)});
    used += bytes;
  }
  // Counted once, as this rank's contribution (how MPI_Allgatherv forwards it is MPI's choice).
  ctx.counters.raw_bytes += send.bytes();
  ctx.counters.wire_bytes += used;
  ctx.counters.streams += segs.count();

  uint64_t my_bytes = used;
  std::vector<uint64_t> sizes(static_cast<size_t>(p));
  HYCC_CHECK_MPI(
      MPI_Allgather(&my_bytes, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, ctx.comm));
  uint64_t total = 0;
  for (const uint64_t s : sizes) total += s;
  if (total > static_cast<uint64_t>(INT_MAX)) {  // every rank sees the same sizes and throws
    throw InvalidArgument(tagged("coll", "compress_once allreduce: the gathered streams take ",
                                 total, " bytes, more than MPI's INT_MAX; use the ring"));
  }
  std::vector<int> counts(static_cast<size_t>(p)), displs(static_cast<size_t>(p));
  for (size_t j = 0, off = 0; j < sizes.size(); off += sizes[j], ++j) {
    counts[j] = static_cast<int>(sizes[j]);
    displs[j] = static_cast<int>(off);
  }
  std::vector<std::byte> all(total);
  HYCC_CHECK_MPI(MPI_Allgatherv(mine.data(), static_cast<int>(used), MPI_BYTE, all.data(),
                                counts.data(), displs.data(), MPI_BYTE, ctx.comm));

  // Decode every rank's streams in rank order and sum: sum = x_0, then sum += x_j.
  std::vector<float> sum(n), part(segs.count() == 0 ? 0 : segs[0].count);
  for (size_t j = 0; j < sizes.size(); ++j) {
    std::span<const std::byte> rest(all.data() + displs[j], sizes[j]);
    try {
      for (size_t k = 0; k < segs.count(); ++k) {
        const ChunkRange g = segs[k];
        const size_t bytes = inspect(rest).stream_bytes();
        float* dst = j == 0 ? sum.data() + g.offset : part.data();
        decode_stream_f32(ctx, rest.first(bytes), send.dtype, g.count, dst);
        if (j != 0) {
          for (size_t i = 0; i < g.count; ++i) sum[g.offset + i] += part[i];
        }
        rest = rest.subspan(bytes);
      }
      if (!rest.empty()) {
        throw CorruptStream(tagged("coll", "compress_once allreduce: rank ", j, " sent ",
                                   rest.size(), " bytes past its last stream"));
      }
    } catch (const Error&) {
      ctx.errors.capture();
    }
  }
  store_result(sum.data(), n, op, p, recv, 0);
}

}  // namespace hycc::coll
