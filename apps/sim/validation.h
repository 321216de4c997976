// The model against measured hycc-train runs on tools/netemu (docs/sim.md, "Validation against
// measured runs"): per (policy, link rate), the predicted iteration time against the measured
// median step time, and the predicted speedup over the baseline at the same rate against the
// measured one. The model's only measured inputs are the link figures of the cluster file and
// the compute speed of one rank, calibrated once from a baseline run on shared memory; nothing
// is fitted to the runs being validated.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "iteration.h"
#include "measured_run.h"
#include "sim_policy.h"

namespace hycc::sim {

// The pass criteria of issue 7.
struct ValidationCriteria {
  double max_time_error = 0.20;     // |predicted / measured - 1| of the iteration time
  double max_speedup_error = 0.10;  // |predicted - measured| speedup over the baseline
};

// What the compute speed of one rank is calibrated on, in a baseline run: on shared memory, or on
// the emulated cluster at a rate far above the validated ones (tools/experiment's
// calibration-shm.jsonl and calibration-fast.jsonl).
enum class CalibrationBasis {
  // The median compute_s (step time less the rank's time inside hycc calls, largest over the
  // ranks): R = flops_per_rank_step / compute_s.
  kComputeTime,
  // The median step time: R such that the model of the calibration run itself (on shared memory
  // every rank on one node, on netemu the cluster at the run's rate) predicts its median step. On a
  // machine with fewer cores
  // than ranks the step is the CPU's time for everyone's compute, and a rank waiting for a core
  // inside an MPI call counts as comm_s, not compute_s.
  kStepTime,
};
const char* calibration_basis_name(CalibrationBasis b);  // "compute" or "step"

// The compute speed of one rank, from baseline runs (never a run being validated).
struct Calibration {
  std::string source;  // the runs' files, comma-separated
  CalibrationBasis basis = CalibrationBasis::kComputeTime;
  // The median compute_s or step_s of the run; with several runs the median of theirs, and the
  // speed is the median of the runs' speeds (runs spread over time average the load of a shared
  // machine).
  double measured_s = 0;
  double flops_per_rank_step = 0;  // flops_per_token x b m s / (tp pp), flop
  double gpu_flops = 0;            // flop/s per rank
  double compute_s = 0;            // the model's compute per step at that speed, m c (s)
};

// Throws InvalidArgument unless every run is a baseline with the layout's grid (on netemu, also the
// cluster's placement) and, for kStepTime, its step time is above the model's communication.
Calibration calibrate(const std::vector<MeasuredRun>& runs, const ModelConfig& model,
                      const ClusterConfig& cluster, const LayoutConfig& layout,
                      CalibrationBasis basis = CalibrationBasis::kComputeTime);

// Which calibration runs give the compute speed of a measured run.
enum class CalibrationMatch {
  // Those in the measured run's directory (one tools/experiment report: its calibration runs
  // take part in every round beside the policies, so they saw the machine's load as the policies
  // did); all of them for a run whose directory holds none.
  kDirectory,
  kAll,  // all of them, for every run (the median of their speeds)
};
const char* calibration_match_name(CalibrationMatch m);  // "directory" or "all"

// The calibrations of a validation and which one predicts each measured run.
struct CalibrationSet {
  std::vector<Calibration> calibrations;  // at least one
  std::vector<size_t> of_run;             // per measured run, an index; empty: 0 for every run
  const Calibration& of(size_t run) const {
    return calibrations.at(of_run.empty() ? 0 : of_run.at(run));
  }
};

// Groups the calibration runs as `match` says and calibrates each group (see calibrate()).
CalibrationSet calibrate_for(const std::vector<MeasuredRun>& calibration_runs,
                             const std::vector<MeasuredRun>& measured, CalibrationMatch match,
                             const ModelConfig& model, const ClusterConfig& cluster,
                             const LayoutConfig& layout, CalibrationBasis basis);

// Throws InvalidArgument naming the first field in which `run` differs from the model, the
// cluster (hosts, ranks per node) or the layout (grid, ZeRO, micro-batches): a prediction for
// another setup would compare nothing.
void check_run_matches(const RunDescription& run, const ModelConfig& model,
                       const ClusterConfig& cluster, const LayoutConfig& layout);

// One dimension: the model's message size and compression ratio against the statistics.
struct TrafficCheck {
  std::string dimension;
  double predicted_message_bytes = 0, measured_message_bytes = 0;
  double predicted_ratio = 1, measured_ratio = 1;
};

struct RunValidation {
  std::string source;
  RunDescription run;
  long steps_used = 0;
  double measured_step = 0, predicted_step = 0;
  double step_error = 0;  // predicted / measured - 1
  bool step_pass = false;
  // Compute and communication as the trainer splits them: compute_s against the model's
  // compute, comm_s (inside hycc calls, waiting and the pipeline bubble included) against the
  // rest of the predicted iteration.
  double measured_compute = 0, predicted_compute = 0;
  double measured_comm = 0, predicted_comm = 0;
  bool has_speedup = false;  // a policy other than baseline, with a baseline at the same rate
  double measured_speedup = 0, predicted_speedup = 0;
  double speedup_error = 0;  // predicted - measured
  bool speedup_pass = false;
  size_t calibration = 0;  // index into the CalibrationSet
  std::vector<TrafficCheck> traffic;
  IterationResult prediction;
};

// The model of each run's policy.
using PolicyLookup = std::function<SimPolicy(const RunDescription&)>;

// Every run predicted with the cluster's links at the run's rate (inter-node bandwidth = the
// netemu rate per host link and direction) and the compute speed of its calibration; speedups
// against the baseline run of the same rate. Throws InvalidArgument for a run that is not on
// netemu, does not match the setup, or repeats a (policy, rate) pair.
std::vector<RunValidation> validate(const ModelConfig& model, const ClusterConfig& cluster,
                                    const LayoutConfig& layout, const CalibrationSet& calibration,
                                    const std::vector<MeasuredRun>& runs,
                                    const PolicyLookup& policy_of,
                                    const ValidationCriteria& criteria = {});

// Tables: one row per run (iteration, speedup, compute, comm), then the traffic per dimension.
std::string validation_table(const CalibrationSet& calibration,
                             const std::vector<RunValidation>& rows,
                             const ValidationCriteria& criteria);
std::string traffic_check_table(const std::vector<RunValidation>& rows);
// true when every run meets both criteria (runs without a speedup: the time criterion only).
bool all_pass(const std::vector<RunValidation>& rows);
nlohmann::json validation_json(const CalibrationSet& calibration,
                               const std::vector<RunValidation>& rows,
                               const ValidationCriteria& criteria);

}  // namespace hycc::sim
