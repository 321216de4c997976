#include "coll/two_level.h"

namespace hycc::coll {

const CodecConfig& uncompressed() {
  static const CodecConfig none = CodecConfig::parse("none");
  return none;
}

void add_level_counters(Context& ctx, const Context& level, bool inter) {
  ctx.counters.codec_seconds += level.counters.codec_seconds;
  if (!inter) {
    ctx.counters.intra_bytes += level.counters.wire_bytes;
    return;
  }
  ctx.counters.raw_bytes += level.counters.raw_bytes;
  ctx.counters.wire_bytes += level.counters.wire_bytes;
  ctx.counters.streams += level.counters.streams;
}

int rank_at(const comm::Topology& topology, int node, int local) {
  return topology.ranks_of(node).at(static_cast<size_t>(local));
}

}  // namespace hycc::coll
