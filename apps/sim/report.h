// The simulator's outputs: tables of the iteration breakdown and of the bytes per dimension, the
// speedup of each policy over the uncompressed baseline, and the same as JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "iteration.h"

namespace hycc::sim {

struct PolicyRun {
  std::string policy, description;
  IterationResult result;
  double speedup = 1;  // baseline iteration time / this policy's
};

// Every policy, each against the uncompressed baseline; `layout.dp` must be set.
std::vector<PolicyRun> compare_policies(const ModelConfig& model, const ClusterConfig& cluster,
                                        const LayoutConfig& layout,
                                        const std::vector<SimPolicy>& policies);

// A few '#' lines: the model, the cluster, the layout and where each dimension's groups sit.
std::string describe_setup(const ModelConfig& model, const ClusterConfig& cluster,
                           const LayoutConfig& layout, const IterationResult& any_run);
// One row per policy: iteration time and its parts (s), TFLOPS/GPU, samples/s, speedup.
std::string breakdown_table(const std::vector<PolicyRun>& runs);
// One row per policy and dimension used: calls, message size, codec, ratio, link, bytes per GPU
// per iteration before and after compression, transfer and codec seconds.
std::string traffic_table(const std::vector<PolicyRun>& runs);

nlohmann::json to_json(const ModelConfig& model, const ClusterConfig& cluster,
                       const LayoutConfig& layout, const std::vector<PolicyRun>& runs);

}  // namespace hycc::sim
