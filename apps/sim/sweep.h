// Sweeps of the model over node counts or network bandwidth: one CSV row per (value, policy),
// and a PNG plot of the speedups drawn by gnuplot when it is installed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report.h"

namespace hycc::sim {

enum class SweepKey { kNodes, kBandwidth };

struct SweepSpec {
  SweepKey key = SweepKey::kNodes;
  std::vector<double> values;  // nodes, or inter-node bandwidth in Gbit/s
};

// "nodes=2:48:2", "nodes=4,8,16", "bandwidth=10,25,100" (Gbit/s per node), "bandwidth=1:10".
// A range is first:last[:step], step 1 by default. Throws InvalidArgument naming the spec.
SweepSpec parse_sweep(std::string_view spec);
const char* sweep_key_name(SweepKey k);

struct SweepPoint {
  double value = 0;
  std::vector<PolicyRun> runs;
};

// Runs every value; node counts whose GPUs tp x pp does not divide are left out and listed in
// `skipped`. The global batch grows with dp (micro-batches per iteration stay as set).
std::vector<SweepPoint> run_sweep(const SweepSpec& spec, const ModelConfig& model,
                                  const ClusterConfig& cluster, const LayoutConfig& layout,
                                  const std::vector<SimPolicy>& policies,
                                  std::vector<std::string>& skipped);

// The CSV text: a header line, then one line per (value, policy).
std::string sweep_csv(const SweepSpec& spec, const std::vector<SweepPoint>& points);

// A gnuplot script that plots the speedup column of `csv_path` per policy into `png_path`.
std::string gnuplot_script(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                           const std::string& csv_path, const std::string& png_path);

}  // namespace hycc::sim
