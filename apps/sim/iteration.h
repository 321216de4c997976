// One training iteration of a 3D-parallel (tp x pp x dp, optionally ZeRO-1/2) GPT model under a
// compression policy: compute, the 1F1B pipeline bubble, and every dimension's communication,
// put together on the critical path (docs/sim.md, "Iteration").
#pragma once

#include <array>

#include "collective_time.h"
#include "config.h"
#include "sim_policy.h"

namespace hycc::sim {

// One dimension's traffic in an iteration, for one GPU.
struct DimensionTraffic {
  Dimension dimension = Dimension::kOther;
  long calls = 0;            // collectives per iteration
  double message_bytes = 0;  // uncompressed size of one call, S
  CodecFigures codec;        // what the policy chose for it
  GroupLinks links;          // where its groups sit
  CollectiveTime per_call;   // one call
  double raw_bytes = 0;      // sent per iteration, uncompressed
  double wire_bytes = 0;     // sent per iteration, compressed
};

// Seconds per iteration; the parts add up to `iteration`.
struct Breakdown {
  double compute = 0;    // m micro-batches of forward and backward on the busiest stage
  double bubble = 0;     // (p - 1) idle micro-batch slots of the 1F1B schedule
  double tp = 0;         // tensor-parallel allreduces (transfer), m micro-batches
  double pp = 0;         // pipeline send/recv (transfer), m micro-batches
  double dp = 0;         // exposed gradient reduction, ZeRO gather and embedding sync (transfer)
  double codec = 0;      // compress and decompress on the critical path
  double dp_hidden = 0;  // gradient reduction hidden behind the last backward pass (not in total)
  double iteration = 0;
};

struct IterationResult {
  Breakdown time;
  std::array<DimensionTraffic, 6> traffic;  // in kSimDimensions order; calls = 0 if unused
  double flops_per_iteration = 0;           // executed by the whole cluster (recompute included)
  double samples_per_iteration = 0;
  double tflops_per_gpu = 0;  // flops_per_iteration / (iteration * GPUs) / 1e12
  double samples_per_second = 0;
  double micro_batch_compute = 0;  // seconds of one micro-batch's forward + backward on a GPU
  double bubble_fraction = 0;      // (p - 1) / (m + p - 1)
};

// 1F1B idle share of the pipeline: (p - 1) / (m + p - 1).
double bubble_fraction(long pp, long micro_batches);

// The model; `layout.dp` must be set (check_fit).
IterationResult simulate(const ModelConfig& model, const ClusterConfig& cluster,
                         const LayoutConfig& layout, const SimPolicy& policy);

}  // namespace hycc::sim
