// Alpha-beta time of one collective with compression (docs/sim.md, "Communication"):
//   transfer = steps * alpha + factor * S / (ratio * B)
//   codec    = (bytes compressed) / C + (bytes decompressed) / D     (on the critical path)
// with S the uncompressed message in bytes, B the per-flow bandwidth of the group's link class,
// C and D the codec's compress and decompress throughput (uncompressed bytes per second).
#pragma once

#include <string>

#include "placement.h"

namespace hycc::sim {

enum class Collective { kAllreduce, kReduceScatter, kAllgather, kSendRecv };
const char* collective_name(Collective c);

// What a codec does to one dimension's messages.
struct CodecFigures {
  std::string codec = "none";
  double ratio = 1;                 // uncompressed bytes / compressed bytes
  double compress_bandwidth = 0;    // uncompressed bytes/s; 0: free (no codec time)
  double decompress_bandwidth = 0;  // uncompressed bytes/s; 0: free
  bool compressed() const { return codec != "none"; }
};

// Ring factors: the share of S each rank sends. Allreduce 2 (n-1)/n, reduce-scatter and
// allgather (n-1)/n (S is the full vector: the reduced input, or the gathered output), send/recv 1.
double ring_factor(Collective c, long n);
// Steps, each paying the latency once: allreduce 2 (n-1), reduce-scatter and allgather n-1,
// send/recv 1.
long ring_steps(Collective c, long n);
// Bytes one rank compresses and decompresses in sequence, as fractions of S: the ring
// reduce-scatter recompresses the partial sum at each of its n-1 hops ((n-1)/n each way); the
// allgather compresses its own chunk once (1/n) and decompresses the n-1 it receives; the
// allreduce is both (compress 1, decompress 2 (n-1)/n); send/recv compresses and decompresses S.
double compressed_share(Collective c, long n);
double decompressed_share(Collective c, long n);

struct CollectiveTime {
  double transfer = 0;    // seconds on the links, latency included
  double codec = 0;       // seconds in the codec
  double raw_bytes = 0;   // bytes one rank sends, uncompressed
  double wire_bytes = 0;  // bytes one rank sends, compressed
  double total() const { return transfer + codec; }
};

// One collective of `bytes` (uncompressed S) over a group with `links`.
CollectiveTime collective_time(Collective c, double bytes, const GroupLinks& links,
                               const CodecFigures& codec);

}  // namespace hycc::sim
