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
#include "coll/ring_pipeline.h"
#include "comm/transport.h"

namespace hycc::coll {

void broadcast_chain(Context& ctx, TensorView buffer, int root) {
  const int p = ctx.size, r = ctx.rank;
  const int position = (r - root + p) % p;  // place in the chain, the root is 0
  const int prev = (r + p - 1) % p;
  const bool last = position + 1 == p;
  const int next = (r + 1) % p;
  const Segments segs{buffer.count, ctx.seg_elems};
  const size_t m = segs.count();
  const std::unique_ptr<comm::Transport> transport =
      host_transport(ctx, ::hycc::device::host_ops());
  std::vector<StreamBuffer> streams(m);
  // Stream k goes on to the next rank while this rank decodes it: lent to the transport (no
  // deleter), kept in `streams` until every send has completed below.
  const auto send_on = [&](size_t k) {
    count_sent_stream(ctx, stream_view(streams[k]));
    transport->post_send(next, ::hycc::device::lent_payload(streams[k].data(), streams[k].size), k);
  };

  if (position == 0) {
    for (size_t k = 0; k < m; ++k) {
      const TensorView part = slice(buffer, segs[k].offset, segs[k].count);
      compress_into(ctx, part, streams[k], stream_seed(ctx.seed, r, 0, k));
      send_on(k);
      adopt_own_stream(ctx, stream_view(streams[k]), part, part);
      transport->progress();  // drive the transfers of earlier segments while we compress
    }
  } else {
    for (size_t k = 0; k < m; ++k) {
      transport->post_recv(prev, max_compressed_bytes(ctx.codec, buffer.dtype, segs[k].count), k);
    }
    transport->receives_announced();
    for (size_t k = 0; k < m; ++k) {
      transport->wait_recv(streams[k]);
      if (!last) send_on(k);  // forward the bytes as they are, then decode
      try {
        decode_stream(ctx, stream_view(streams[k]), slice(buffer, segs[k].offset, segs[k].count));
      } catch (const Error&) {
        ctx.errors.capture();
      }
    }
  }
  std::vector<::hycc::device::Payload> returned;
  transport->reclaim(returned, true);
}

}  // namespace hycc::coll
