// The cost model of adaptive rules (see cost_model.h; docs/policy.md, "Adaptive rules").
#include "policy/cost_model.h"

namespace hycc::policy {
namespace {

// One operation's shape on p ranks: messages in sequence, the share of S that one rank sends,
// and the shares of S that one rank compresses and decompresses on the critical path.
struct Shape {
  double steps = 0;
  double wire = 0;
  double compressed = 0;
  double decompressed = 0;
};

Shape shape_of(Operation op, Path path, double p) {
  const double share = (p - 1) / p;
  if (op == Operation::kReduceScatter &&
      (path == Path::kErrorFeedback || path == Path::kTwoStage)) {
    // Both run the first stage only: compress S in p chunks, decode them (residual), an
    // alltoall after a size exchange, decode the p - 1 received chunks of this rank's (its own
    // is decoded already).
    return {p, share, 1, 2 - 1 / p};
  }
  if (path == Path::kErrorFeedback) return {p - 1, p - 1, 1, p};  // allgather of whole streams
  if (path == Path::kTwoStage) {
    // Worker: compress S, decode S (residual); server: decode the p - 1 received chunks, compress
    // and decode its chunk (S / p); then decode the p - 1 other servers' chunks (a rank's own
    // streams are decoded once). Two size exchanges add two messages.
    return {2 * (p - 1) + 2, 2 * share, 1 + 1 / p, 3 - 1 / p};
  }
  switch (op) {
    case Operation::kAllreduce:  // ring: reduce-scatter (recompressing) + allgather
      return {2 * (p - 1), 2 * share, 1, 2 * share};
    case Operation::kReduceScatter:
    case Operation::kAlltoall:
      return {p - 1, share, share, share};
    case Operation::kAllgather:  // each rank compresses its own block once
      return {p - 1, share, 1 / p, share};
    case Operation::kBroadcast:  // chain: the pipeline fills over p - 1 hops
      return {p - 1, 1, 1, 1};
    case Operation::kSendRecv:
      return {1, 1, 1, 1};
  }
  return {};
}

}  // namespace

ModelledTime modelled_time(Operation op, Path path, int ranks, double bytes,
                           const LinkFigures& link, const CodecFigures& codec) {
  ModelledTime t;
  if (op != Operation::kSendRecv && ranks < 2) return t;  // nobody to talk to
  const double p = op == Operation::kSendRecv ? 2 : double(ranks);
  const Shape s = shape_of(op, path == Path::kNative ? Path::kCodec : path, p);
  const double ratio = path == Path::kNative ? 1 : codec.ratio;
  t.wire_bytes = s.wire * bytes / ratio;
  t.transfer = s.steps * link.latency;
  if (link.bandwidth > 0) t.transfer += t.wire_bytes / link.bandwidth;
  if (path != Path::kNative) {
    t.codec = bytes * (s.compressed * codec.compress + s.decompressed * codec.decompress);
  }
  return t;
}

}  // namespace hycc::policy
