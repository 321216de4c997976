// A measured hycc-train run, as the validation needs it: the run's description (the "run" object
// of its first JSON line: policy, grid, model, batch, network) and the medians of its steady steps
// (docs/sim.md, "Validation against measured runs").
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "../bench/bench_util.h"

namespace hycc::sim {

// The "run" object hycc-train writes into its first JSON line (docs/training.md).
struct RunDescription {
  std::string policy;         // the policy's name ("baseline", "hybrid", ...)
  std::string policy_source;  // what --policy named (a preset or a file); empty: HYCC_POLICY
  long dp = 1, tp = 1, pp = 1, zero = 0;
  long layers = 0, hidden = 0, heads = 0, vocabulary = 0, sequence = 0;
  long batch = 0;          // global batch, sequences per step
  long micro_batches = 1;  // per replica and step
  long ranks = 1;
  long ranks_per_node = 1;  // ranks that share a node (MPI's shared-memory split)
  bool emulated = false;    // ran on tools/netemu; false: one machine, shared memory
  std::string rate;         // netemu's --rate, e.g. "100mbit"
  double rate_bits_per_s = 0;
  long hosts = 0;  // netemu hosts; 0 when not emulated

  long micro_batch() const { return batch / (dp * micro_batches); }  // sequences
  // "baseline @ 100mbit", "baseline @ shared memory".
  std::string label() const;
};

// One dimension's traffic in a steady step, for one rank (from the differences of the
// cumulative statistics between consecutive steps).
struct MeasuredTraffic {
  double calls = 0;          // per rank and step
  double message_bytes = 0;  // uncompressed bytes per call
  double ratio = 1;          // uncompressed / sent bytes
};

struct MeasuredRun {
  std::string source;  // the file
  RunDescription run;
  long steps = 0;       // JSON lines with a step
  long steps_used = 0;  // after the first tenth, without evaluation steps
  // Medians over the steps used, seconds.
  double step_s = 0;     // wall time of the step (largest over the ranks)
  double comm_s = 0;     // time inside hycc calls, waiting included (largest over the ranks)
  double compute_s = 0;  // step time less own comm time (largest over the ranks)
  std::map<std::string, MeasuredTraffic> traffic;  // by dimension name ("tp", "dp", ...)
};

// Reads hycc-train's JSON lines (`--json`). Steps kept: those after the first tenth (at least
// one step dropped: start-up) that ran no evaluation (val_loss null); if none is left, every
// step after the first. Throws InvalidArgument "[sim] source:line: ..." for text that is not
// such lines, or without the "run" description.
MeasuredRun parse_measured_run(std::string_view json_lines, std::string source);
MeasuredRun load_measured_run(const std::string& path);

using bench::median;  // the median of a run's values (bench_util.h)

}  // namespace hycc::sim
