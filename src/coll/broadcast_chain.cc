// Chained (pipelined) broadcast. The ranks form a chain root, root + 1, .., root + p - 1 (mod p).
// The root compresses segment k, sends it to the next rank and replaces its own segment by the
// decoded stream; every other rank receives segment k, forwards the same bytes to the next rank
// and decodes them, while segment k + 1 is on its way. All receives are posted up front.
//
// With S segments the last rank has the message after about S + p - 2 segment transfers. Per
// rank: one compressed message sent (none by the last rank), 1 compression at the root, 1
// decompression everywhere (the root's only with a lossy codec). Error: one compression, and
// every rank, the root included, holds the same decoded bits.
#include <vector>

#include "coll/algorithms.h"

namespace hycc::coll {

void broadcast_chain(Context& ctx, TensorView buffer, int root) {
  const int p = ctx.size, r = ctx.rank;
  const int position = (r - root + p) % p;  // place in the chain, the root is 0
  const int prev = (r + p - 1) % p;
  const int next = position + 1 < p ? (r + 1) % p : MPI_PROC_NULL;
  const Segments segs{buffer.count, ctx.seg_elems};
  const size_t m = segs.count();
  std::vector<std::vector<std::byte>> streams(m);
  std::vector<MPI_Request> sends(m, MPI_REQUEST_NULL);

  if (position == 0) {
    for (size_t k = 0; k < m; ++k) {
      const TensorView part = slice(buffer, segs[k].offset, segs[k].count);
      const size_t bytes = compress_into(ctx, part, streams[k], stream_seed(ctx.seed, r, 0, k));
      count_sent_stream(ctx, {streams[k].data(), bytes});
      HYCC_CHECK_MPI(MPI_Isend(streams[k].data(), static_cast<int>(bytes), MPI_BYTE, next, ctx.tag,
                               ctx.comm, &sends[k]));
      adopt_own_stream(ctx, {streams[k].data(), bytes}, part, part);
      int done = 0;  // drive the transfers of earlier segments while we compress the next
      HYCC_CHECK_MPI(
          MPI_Testall(static_cast<int>(k + 1), sends.data(), &done, MPI_STATUSES_IGNORE));
    }
  } else {
    std::vector<MPI_Request> recvs(m, MPI_REQUEST_NULL);
    for (size_t k = 0; k < m; ++k) {
      streams[k].resize(max_compressed_bytes(ctx.codec, buffer.dtype, segs[k].count));
      HYCC_CHECK_MPI(MPI_Irecv(streams[k].data(), mpi_count(streams[k].size(), "segment bytes"),
                               MPI_BYTE, prev, ctx.tag, ctx.comm, &recvs[k]));
    }
    for (size_t k = 0; k < m; ++k) {
      MPI_Status status;
      HYCC_CHECK_MPI(MPI_Wait(&recvs[k], &status));
      int bytes = 0;
      HYCC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
      if (next != MPI_PROC_NULL) {  // forward the bytes as they are, then decode
        count_sent_stream(ctx, {streams[k].data(), static_cast<size_t>(bytes)});
        HYCC_CHECK_MPI(
            MPI_Isend(streams[k].data(), bytes, MPI_BYTE, next, ctx.tag, ctx.comm, &sends[k]));
      }
      try {
        decode_stream(ctx, {streams[k].data(), static_cast<size_t>(bytes)},
                      slice(buffer, segs[k].offset, segs[k].count));
      } catch (const Error&) {
        ctx.errors.capture();
      }
    }
  }
  if (m != 0) {
    HYCC_CHECK_MPI(MPI_Waitall(static_cast<int>(m), sends.data(), MPI_STATUSES_IGNORE));
  }
}

}  // namespace hycc::coll
