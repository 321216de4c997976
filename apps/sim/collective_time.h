// Alpha-beta time of one collective with compression (docs/sim.md, "Communication"): the
// library's cost model (src/policy/cost_model.h, the one adaptive policy rules use):
//   transfer = steps * alpha + wire share * S / (ratio * B)
//   codec    = compressed share * S / C + decompressed share * S / D     (on the critical path)
// with S the uncompressed message in bytes, B the per-flow bandwidth of the group's link class,
// C and D the codec's compress and decompress throughput (uncompressed bytes per second), and
// the shares of hycc's algorithm: the ring for codecs, compress-once + allgather for ef+CODEC
// gradients, two stages (alltoall + allgather of compressed chunks) for ef2+CODEC.
#pragma once

#include <cstdint>
#include <string>

#include "placement.h"

namespace hycc::sim {

enum class Collective { kAllreduce, kReduceScatter, kAllgather, kSendRecv };
const char* collective_name(Collective c);

// How a gradient compressor around a codec runs its reductions (docs/gradients.md).
enum class Feedback : uint8_t {
  kNone,          // a codec in the ring (or no compression)
  kCompressOnce,  // ef+CODEC: each rank's stream gathered by all: (n-1) S / ratio on the wire
  kTwoStage,      // ef2+CODEC: worker and server stages: 2 (n-1)/n S / ratio on the wire
};

// What a codec does to one dimension's messages.
struct CodecFigures {
  std::string codec = "none";
  double ratio = 1;                 // uncompressed bytes / compressed bytes
  double compress_bandwidth = 0;    // uncompressed bytes/s; 0: free (no codec time)
  double decompress_bandwidth = 0;  // uncompressed bytes/s; 0: free
  Feedback feedback = Feedback::kNone;
  bool compressed() const { return codec != "none"; }
};

struct CollectiveTime {
  double transfer = 0;    // seconds on the links, latency included
  double codec = 0;       // seconds in the codec
  double raw_bytes = 0;   // bytes one rank sends, uncompressed (the ring's share of S)
  double wire_bytes = 0;  // bytes one rank sends, compressed
  double total() const { return transfer + codec; }
};

// One collective of `bytes` (uncompressed S) over a group with `links`.
CollectiveTime collective_time(Collective c, double bytes, const GroupLinks& links,
                               const CodecFigures& codec);

}  // namespace hycc::sim
