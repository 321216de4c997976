// The cost model behind adaptive policy rules: the time of one call of an operation with a
// candidate compressor, from the link's latency and bandwidth and the codec's speed (the
// alpha-beta model of docs/sim.md, for hycc's own algorithms):
//   transfer = steps * latency + wire share * S / (ratio * bandwidth)
//   codec    = compressed share * S * compress + decompressed share * S * decompress
// with S the uncompressed message, compress and decompress in seconds per uncompressed byte.
#pragma once

#include <cstddef>

#include "hycc/policy.h"
#include "hycc/policy_engine.h"

namespace hycc::policy {

using hycc::LinkFigures;

// One codec on one dtype: seconds per uncompressed byte and the compression ratio.
struct CodecFigures {
  double compress = 0;
  double decompress = 0;
  double ratio = 1;     // uncompressed bytes / stream bytes
  bool usable = false;  // false: the codec rejected the dtype (never chosen)
};

// How a candidate runs: uncompressed (native MPI), a codec inside hycc's algorithm for `op`,
// error feedback around a codec (ef+: compress once, allgather the streams, decode all p of
// them), or in two stages (ef2+: an alltoall of compressed chunks, a server stage, an allgather).
// A reduce-scatter with error feedback (ef+ or ef2+) runs the first stage only.
enum class Path { kNative, kCodec, kErrorFeedback, kTwoStage };

struct ModelledTime {
  double transfer = 0;
  double codec = 0;
  double wire_bytes = 0;  // bytes one rank sends
  double total() const { return transfer + codec; }
};

// The model's time of one `op` of `bytes` on `ranks` ranks (a send/recv: one message). `codec` is
// ignored for kNative.
ModelledTime modelled_time(Operation op, Path path, int ranks, double bytes,
                           const LinkFigures& link, const CodecFigures& codec);

}  // namespace hycc::policy
