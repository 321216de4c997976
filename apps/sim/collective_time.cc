#include "collective_time.h"

#include "policy/cost_model.h"

namespace hycc::sim {
namespace {

Operation operation_of(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return Operation::kAllreduce;
    case Collective::kReduceScatter:
      return Operation::kReduceScatter;
    case Collective::kAllgather:
      return Operation::kAllgather;
    case Collective::kSendRecv:
      return Operation::kSendRecv;
  }
  return Operation::kAllreduce;
}

policy::Path path_of(Collective c, const CodecFigures& codec) {
  if (!codec.compressed()) return policy::Path::kNative;
  const bool reduction = c == Collective::kAllreduce || c == Collective::kReduceScatter;
  if (!reduction || codec.feedback == Feedback::kNone) return policy::Path::kCodec;
  return codec.feedback == Feedback::kTwoStage ? policy::Path::kTwoStage
                                               : policy::Path::kErrorFeedback;
}

}  // namespace

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

CollectiveTime collective_time(Collective c, double bytes, const GroupLinks& links,
                               const CodecFigures& codec) {
  CollectiveTime t;
  const long n = links.group_size;
  if (n < 2 || bytes <= 0) return t;  // nobody to talk to
  const LinkFigures link{links.latency, links.bandwidth};
  policy::CodecFigures figures;
  figures.ratio = codec.ratio;
  figures.compress = codec.compress_bandwidth > 0 ? 1 / codec.compress_bandwidth : 0;
  figures.decompress = codec.decompress_bandwidth > 0 ? 1 / codec.decompress_bandwidth : 0;
  figures.usable = true;
  const Operation op = operation_of(c);
  const int ranks = static_cast<int>(n);
  const policy::ModelledTime native =
      policy::modelled_time(op, policy::Path::kNative, ranks, bytes, link, figures);
  const policy::ModelledTime m =
      policy::modelled_time(op, path_of(c, codec), ranks, bytes, link, figures);
  t.raw_bytes = native.wire_bytes;
  t.wire_bytes = m.wire_bytes;
  t.transfer = m.transfer;
  t.codec = m.codec;
  return t;
}

}  // namespace hycc::sim
