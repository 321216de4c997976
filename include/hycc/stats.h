// Statistics per parallel dimension and operation: what the policy's calls cost and saved.
// Fed with the CollectiveStats of each call (CollectiveOptions::stats) and, when sampled, the
// observed error of a lossy call; printed as a table or written as JSON at the end of a run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "hycc/collectives.h"
#include "hycc/policy.h"

namespace hycc {

struct StatsEntry {
  uint64_t calls = 0;
  uint64_t compressed_calls = 0;  // calls that sent compressed streams
  uint64_t message_bytes = 0;     // uncompressed tensor sizes
  uint64_t raw_bytes = 0;         // bytes before compression (of what was sent)
  uint64_t wire_bytes = 0;        // bytes after compression (sent)
  double codec_seconds = 0;
  double seconds = 0;  // whole calls
  uint64_t error_samples = 0;
  double max_error = 0;             // largest sampled max-abs error
  uint64_t device_calls = 0;        // calls on device buffers
  uint64_t host_syncs = 0;          // the host's synchronizations with the device in them
  uint64_t two_level_calls = 0;     // calls that ran Algorithm::kTwoLevel
  uint64_t topology_fallbacks = 0;  // calls that asked for it and ran the ring (topology)

  double ratio() const { return wire_bytes == 0 ? 1.0 : double(raw_bytes) / double(wire_bytes); }
  // Time in calls outside the codecs: moving bytes and waiting for peers.
  double transfer_seconds() const { return seconds > codec_seconds ? seconds - codec_seconds : 0; }
};

class CommStats {
 public:
  void record(Dimension d, Operation op, const CollectiveStats& call);
  // A sampled observed error (max |result - uncompressed result|) of a call.
  void record_error(Dimension d, Operation op, double max_abs_error);
  // Adds a whole entry to (d, op): sums, and the larger of the two errors.
  void add(Dimension d, Operation op, const StatsEntry& entry);

  // nullptr when nothing was recorded for (d, op).
  const StatsEntry* find(Dimension d, Operation op) const;
  // Sum over every dimension and operation.
  StatsEntry total() const;
  bool empty() const { return entries_.empty(); }

  // One row per (dimension, operation) with calls, MB before and after, ratio, codec and
  // transfer seconds and the largest sampled error, then a total row.
  std::string table() const;
  // {"entries": [{"dimension": ..., "operation": ..., "calls": ..., ...}], "total": {...}}
  std::string json() const;

 private:
  std::map<std::pair<Dimension, Operation>, StatsEntry> entries_;
};

}  // namespace hycc
