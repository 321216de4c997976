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

std::vector<std::vector<int>> node_ranks(const comm::Topology& topology) {
  std::vector<std::vector<int>> ranks(static_cast<size_t>(topology.nodes()));
  for (int r = 0; r < topology.size(); ++r) {
    ranks[static_cast<size_t>(topology.node_of[static_cast<size_t>(r)])].push_back(r);
  }
  return ranks;
}

}  // namespace hycc::coll
