#include "collective_time.h"

namespace hycc::sim {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

double ring_factor(Collective c, long n) {
  if (c == Collective::kSendRecv) return 1;
  const double share = double(n - 1) / double(n);
  return c == Collective::kAllreduce ? 2 * share : share;
}

long ring_steps(Collective c, long n) {
  if (c == Collective::kSendRecv) return 1;
  return c == Collective::kAllreduce ? 2 * (n - 1) : n - 1;
}

double compressed_share(Collective c, long n) {
  switch (c) {
    case Collective::kAllreduce:
      return 1;
    case Collective::kReduceScatter:
      return double(n - 1) / double(n);
    case Collective::kAllgather:
      return 1 / double(n);
    case Collective::kSendRecv:
      return 1;
  }
  return 0;
}

double decompressed_share(Collective c, long n) {
  switch (c) {
    case Collective::kAllreduce:
      return 2 * double(n - 1) / double(n);
    case Collective::kReduceScatter:
    case Collective::kAllgather:
      return double(n - 1) / double(n);
    case Collective::kSendRecv:
      return 1;
  }
  return 0;
}

CollectiveTime collective_time(Collective c, double bytes, const GroupLinks& links,
                               const CodecFigures& codec) {
  CollectiveTime t;
  const long n = links.group_size;
  if (n < 2 || bytes <= 0) return t;  // nobody to talk to
  t.raw_bytes = ring_factor(c, n) * bytes;
  t.wire_bytes = t.raw_bytes / codec.ratio;
  t.transfer = double(ring_steps(c, n)) * links.latency + t.wire_bytes / links.bandwidth;
  if (codec.compressed()) {
    if (codec.compress_bandwidth > 0) {
      t.codec += compressed_share(c, n) * bytes / codec.compress_bandwidth;
    }
    if (codec.decompress_bandwidth > 0) {
      t.codec += decompressed_share(c, n) * bytes / codec.decompress_bandwidth;
    }
  }
  return t;
}

}  // namespace hycc::sim
