#include "validation.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "../bench/bench_util.h"
#include "compute.h"
#include "hycc/error.h"

namespace hycc::sim {

using bench::format;
using bench::Table;

namespace {

// Training flops of one rank per step: one micro-batch's tokens b s, m micro-batches, the
// pipeline's flops spread over its tp x pp ranks.
double flops_per_rank_step(const ModelConfig& model, const LayoutConfig& layout) {
  return training_flops_per_token(model, layout.activation_recompute) *
         double(layout.micro_batch * layout.micro_batches) * double(model.sequence) /
         double(layout.tp * layout.pp);
}

void expect(long run_value, long setup_value, const char* what, const RunDescription& run,
            const std::string& setup_name) {
  if (run_value == setup_value) return;
  throw InvalidArgument(tagged("sim", "measured run ", run.label(), ": ", what, " ", run_value,
                               ", but ", setup_name, " has ", setup_value));
}

void check_grid(const RunDescription& run, const LayoutConfig& layout) {
  expect(run.tp, layout.tp, "tp", run, "layout " + layout.name);
  expect(run.pp, layout.pp, "pp", run, "layout " + layout.name);
  expect(run.dp, layout.dp, "dp", run, "layout " + layout.name);
  expect(run.zero, layout.zero_stage, "ZeRO stage", run, "layout " + layout.name);
  expect(run.micro_batch(), layout.micro_batch, "micro-batch (sequences)", run,
         "layout " + layout.name);
  expect(run.micro_batches, layout.micro_batches, "micro-batches", run, "layout " + layout.name);
}

std::string pass_text(bool pass) { return pass ? "pass" : "FAIL"; }

}  // namespace

const char* calibration_basis_name(CalibrationBasis b) {
  return b == CalibrationBasis::kComputeTime ? "compute" : "step";
}

namespace {

// The cluster a calibration run ran on: every rank on one node (shared memory), or the cluster
// at the run's netemu rate.
ClusterConfig cluster_of_run(const RunDescription& run, const ModelConfig& model,
                             const ClusterConfig& cluster, const LayoutConfig& layout) {
  ClusterConfig c = cluster;
  if (run.emulated) {
    check_run_matches(run, model, cluster, layout);
    c.inter_node.bandwidth = run.rate_bits_per_s / 8;
  } else {
    c.nodes = 1;
    c.gpus_per_node = run.ranks;
  }
  return c;
}

// The speed at which the model of `run` (its own cluster, the baseline) predicts its median
// step. The iteration is linear in the compute time per flop, iteration = a / R + b, with b the
// communication; two speeds near the answer give a and b, and R = a / (step - b).
double speed_from_step(const MeasuredRun& run, const ModelConfig& model,
                       const ClusterConfig& cluster, const LayoutConfig& layout,
                       double flops_per_step) {
  ClusterConfig own = cluster_of_run(run.run, model, cluster, layout);
  const auto iteration_at = [&](double flops) {
    own.gpu_flops = flops;
    return simulate(model, own, layout, SimPolicy::baseline()).time.iteration;
  };
  const double guess = flops_per_step / run.step_s;
  const double slow = iteration_at(guess), fast = iteration_at(2 * guess);
  const double a = 2 * guess * (slow - fast), b = slow - a / guess;
  if (run.step_s <= b) {
    throw InvalidArgument(tagged("sim", "calibration run ", run.source, ": step time ", run.step_s,
                                 " s is not above the model's communication there, ", b, " s"));
  }
  return a / (run.step_s - b);
}

}  // namespace

Calibration calibrate(const std::vector<MeasuredRun>& runs, const ModelConfig& model,
                      const ClusterConfig& cluster, const LayoutConfig& layout,
                      CalibrationBasis basis) {
  if (runs.empty()) throw InvalidArgument(tagged("sim", "no calibration run"));
  Calibration c;
  c.basis = basis;
  c.flops_per_rank_step = flops_per_rank_step(model, layout);
  std::vector<double> measured, speeds;
  for (const MeasuredRun& run : runs) {
    if (run.run.policy != "baseline") {
      throw InvalidArgument(tagged("sim", "calibration run ", run.source, " is ", run.run.label(),
                                   "; the compute speed is calibrated on baseline runs"));
    }
    check_grid(run.run, layout);
    const double s = basis == CalibrationBasis::kComputeTime ? run.compute_s : run.step_s;
    if (s <= 0) {
      throw InvalidArgument(tagged("sim", "calibration run ", run.source, " has no ",
                                   calibration_basis_name(basis), " time"));
    }
    measured.push_back(s);
    speeds.push_back(basis == CalibrationBasis::kComputeTime
                         ? c.flops_per_rank_step / s
                         : speed_from_step(run, model, cluster, layout, c.flops_per_rank_step));
    c.source += (c.source.empty() ? "" : ", ") + run.source;
  }
  c.measured_s = median(measured);
  c.gpu_flops = median(speeds);
  c.compute_s = c.flops_per_rank_step / c.gpu_flops;
  return c;
}

const char* calibration_match_name(CalibrationMatch m) {
  return m == CalibrationMatch::kAll ? "all" : "directory";
}

namespace {

std::string directory_of(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return (ec ? std::filesystem::path(path) : p).parent_path().string();
}

}  // namespace

CalibrationSet calibrate_for(const std::vector<MeasuredRun>& calibration_runs,
                             const std::vector<MeasuredRun>& measured, CalibrationMatch match,
                             const ModelConfig& model, const ClusterConfig& cluster,
                             const LayoutConfig& layout, CalibrationBasis basis) {
  CalibrationSet set;
  set.calibrations.push_back(calibrate(calibration_runs, model, cluster, layout, basis));
  if (match == CalibrationMatch::kAll) return set;
  std::map<std::string, std::vector<MeasuredRun>> by_directory;
  for (const MeasuredRun& r : calibration_runs) by_directory[directory_of(r.source)].push_back(r);
  if (by_directory.size() == 1) return set;  // one group: the same as all
  std::map<std::string, size_t> index;       // directory -> calibration
  for (const MeasuredRun& m : measured) {
    const std::string dir = directory_of(m.source);
    const auto group = by_directory.find(dir);
    size_t i = 0;  // all of them
    if (group != by_directory.end()) {
      const auto [it, added] = index.emplace(dir, set.calibrations.size());
      if (added) {
        set.calibrations.push_back(calibrate(group->second, model, cluster, layout, basis));
      }
      i = it->second;
    }
    set.of_run.push_back(i);
  }
  return set;
}

void check_run_matches(const RunDescription& run, const ModelConfig& model,
                       const ClusterConfig& cluster, const LayoutConfig& layout) {
  const std::string m = "model " + model.name;
  expect(run.layers, model.layers, "layers", run, m);
  expect(run.hidden, model.hidden, "hidden", run, m);
  expect(run.heads, model.heads, "heads", run, m);
  expect(run.sequence, model.sequence, "sequence", run, m);
  expect(run.vocabulary, model.vocabulary, "vocabulary", run, m);
  check_grid(run, layout);
  if (!run.emulated) {
    throw InvalidArgument(tagged("sim", "measured run ", run.label(),
                                 " did not run on tools/netemu (no network in its description); "
                                 "a shared-memory baseline is the calibration run"));
  }
  const std::string c = "cluster " + cluster.name;
  expect(run.hosts, cluster.nodes, "hosts", run, c);
  expect(run.ranks_per_node, cluster.gpus_per_node, "ranks per host", run, c);
}

std::vector<RunValidation> validate(const ModelConfig& model, const ClusterConfig& cluster,
                                    const LayoutConfig& layout, const CalibrationSet& calibration,
                                    const std::vector<MeasuredRun>& runs,
                                    const PolicyLookup& policy_of,
                                    const ValidationCriteria& criteria) {
  std::vector<RunValidation> rows;
  std::map<std::string, size_t> seen;  // label -> row
  for (size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& m = runs[i];
    check_run_matches(m.run, model, cluster, layout);
    const std::string label = m.run.label();
    if (!seen.emplace(label, rows.size()).second) {
      throw InvalidArgument(tagged("sim", "two measured runs of ", label, " (", m.source, " and ",
                                   rows[seen[label]].source, "); pass one"));
    }
    ClusterConfig at_rate = cluster;
    at_rate.gpu_flops = calibration.of(i).gpu_flops;
    at_rate.inter_node.bandwidth = m.run.rate_bits_per_s / 8;  // bytes/s per host link

    RunValidation v;
    v.calibration = calibration.of_run.empty() ? 0 : calibration.of_run[i];
    v.source = m.source;
    v.run = m.run;
    v.steps_used = m.steps_used;
    v.prediction = simulate(model, at_rate, layout, policy_of(m.run));
    const Breakdown& b = v.prediction.time;
    v.measured_step = m.step_s;
    v.predicted_step = b.iteration;
    v.step_error = b.iteration / m.step_s - 1;
    v.step_pass = std::fabs(v.step_error) <= criteria.max_time_error;
    v.measured_compute = m.compute_s;
    v.predicted_compute = b.compute;
    v.measured_comm = m.comm_s;
    v.predicted_comm = b.iteration - b.compute;
    for (const DimensionTraffic& t : v.prediction.traffic) {
      if (t.calls == 0) continue;
      TrafficCheck c;
      c.dimension = dimension_name(t.dimension);
      c.predicted_message_bytes = t.message_bytes;
      c.predicted_ratio = t.codec.ratio;
      const auto it = m.traffic.find(c.dimension);
      if (it != m.traffic.end()) {
        c.measured_message_bytes = it->second.message_bytes;
        c.measured_ratio = it->second.ratio;
      }
      v.traffic.push_back(c);
    }
    rows.push_back(std::move(v));
  }
  // Speedups over the baseline of the same rate.
  for (RunValidation& v : rows) {
    if (v.run.policy == "baseline") continue;
    RunDescription base = v.run;
    base.policy = "baseline";
    const auto it = seen.find(base.label());
    if (it == seen.end()) continue;
    const RunValidation& b = rows[it->second];
    v.has_speedup = true;
    v.measured_speedup = b.measured_step / v.measured_step;
    v.predicted_speedup = b.predicted_step / v.predicted_step;
    v.speedup_error = v.predicted_speedup - v.measured_speedup;
    v.speedup_pass = std::fabs(v.speedup_error) <= criteria.max_speedup_error;
  }
  return rows;
}

bool all_pass(const std::vector<RunValidation>& rows) {
  for (const RunValidation& v : rows) {
    if (!v.step_pass || (v.has_speedup && !v.speedup_pass)) return false;
  }
  return !rows.empty();
}

std::string validation_table(const CalibrationSet& calibration,
                             const std::vector<RunValidation>& rows,
                             const ValidationCriteria& criteria) {
  std::string s;
  for (size_t i = 0; i < calibration.calibrations.size(); ++i) {
    const Calibration& c = calibration.calibrations[i];
    s += format(
        "# calibration %zu on the %s time: %s: median %s %.4g s per step, model %.4g Gflop per "
        "rank and step -> %.4g Gflop/s per rank, compute %.4g s per step\n",
        i, calibration_basis_name(c.basis), c.source.c_str(),
        c.basis == CalibrationBasis::kComputeTime ? "compute_s" : "step_s", c.measured_s,
        c.flops_per_rank_step / 1e9, c.gpu_flops / 1e9, c.compute_s);
  }
  s += format(
      "# medians of the steps after the first tenth, evaluation steps left out; pass: iteration "
      "within %.0f%%, speedup over the baseline at the same rate within %.2g\n",
      100 * criteria.max_time_error, criteria.max_speedup_error);
  const Table table({{"run", 22},
                     {"cal", 4},
                     {"steps", 6},
                     {"measured", 9, "s"},
                     {"predicted", 10, "s"},
                     {"error", 8},
                     {"", 5},
                     {"speedup", 8, "meas"},
                     {"speedup", 8, "pred"},
                     {"diff", 7},
                     {"", 5},
                     {"compute", 8, "meas s"},
                     {"compute", 8, "pred s"},
                     {"comm", 8, "meas s"},
                     {"comm", 8, "pred s"}});
  s += table.header() + "\n";
  for (const RunValidation& v : rows) {
    const bool sp = v.has_speedup;
    s +=
        table.row({v.run.label(), format("%zu", v.calibration), format("%ld", v.steps_used),
                   format("%.4g", v.measured_step), format("%.4g", v.predicted_step),
                   format("%+.1f%%", 100 * v.step_error), pass_text(v.step_pass),
                   sp ? format("%.3f", v.measured_speedup) : "-",
                   sp ? format("%.3f", v.predicted_speedup) : "-",
                   sp ? format("%+.3f", v.speedup_error) : "-", sp ? pass_text(v.speedup_pass) : "",
                   format("%.4g", v.measured_compute), format("%.4g", v.predicted_compute),
                   format("%.4g", v.measured_comm), format("%.4g", v.predicted_comm)}) +
        "\n";
  }
  s += format("# validation: %s\n",
              all_pass(rows) ? "every run passes" : "FAILED (see the rows marked FAIL)");
  return s;
}

std::string traffic_check_table(const std::vector<RunValidation>& rows) {
  const Table table({{"run", 22},
                     {"dim", 10},
                     {"msg", 9, "meas MB"},
                     {"msg", 9, "pred MB"},
                     {"ratio", 7, "meas"},
                     {"ratio", 7, "pred"}});
  std::string s = table.header() + "\n";
  for (const RunValidation& v : rows) {
    for (const TrafficCheck& t : v.traffic) {
      const bool measured = t.measured_message_bytes > 0;
      s += table.row({v.run.label(), t.dimension,
                      measured ? format("%.4g", t.measured_message_bytes / 1e6) : "-",
                      format("%.4g", t.predicted_message_bytes / 1e6),
                      measured ? format("%.3f", t.measured_ratio) : "-",
                      format("%.3f", t.predicted_ratio)}) +
           "\n";
    }
  }
  return s;
}

nlohmann::json validation_json(const CalibrationSet& calibration,
                               const std::vector<RunValidation>& rows,
                               const ValidationCriteria& criteria) {
  nlohmann::json j;
  j["calibrations"] = nlohmann::json::array();
  for (const Calibration& c : calibration.calibrations) {
    j["calibrations"].push_back({{"source", c.source},
                                 {"basis", calibration_basis_name(c.basis)},
                                 {"measured_s", c.measured_s},
                                 {"compute_s", c.compute_s},
                                 {"flops_per_rank_step", c.flops_per_rank_step},
                                 {"flops_per_s_per_rank", c.gpu_flops}});
  }
  j["criteria"] = {{"max_time_error", criteria.max_time_error},
                   {"max_speedup_error", criteria.max_speedup_error}};
  j["runs"] = nlohmann::json::array();
  for (const RunValidation& v : rows) {
    nlohmann::json r = {{"source", v.source},
                        {"policy", v.run.policy},
                        {"rate", v.run.rate},
                        {"rate_bits_per_s", v.run.rate_bits_per_s},
                        {"calibration", v.calibration},
                        {"steps_used", v.steps_used},
                        {"measured_step_s", v.measured_step},
                        {"predicted_step_s", v.predicted_step},
                        {"step_error", v.step_error},
                        {"step_pass", v.step_pass},
                        {"measured_compute_s", v.measured_compute},
                        {"predicted_compute_s", v.predicted_compute},
                        {"measured_comm_s", v.measured_comm},
                        {"predicted_comm_s", v.predicted_comm}};
    if (v.has_speedup) {
      r["measured_speedup"] = v.measured_speedup;
      r["predicted_speedup"] = v.predicted_speedup;
      r["speedup_error"] = v.speedup_error;
      r["speedup_pass"] = v.speedup_pass;
    }
    const Breakdown& b = v.prediction.time;
    r["predicted"] = {{"compute", b.compute}, {"bubble", b.bubble}, {"tp", b.tp},
                      {"pp", b.pp},           {"dp", b.dp},         {"codec", b.codec}};
    r["traffic"] = nlohmann::json::array();
    for (const TrafficCheck& t : v.traffic) {
      r["traffic"].push_back({{"dimension", t.dimension},
                              {"measured_message_bytes", t.measured_message_bytes},
                              {"predicted_message_bytes", t.predicted_message_bytes},
                              {"measured_ratio", t.measured_ratio},
                              {"predicted_ratio", t.predicted_ratio}});
    }
    j["runs"].push_back(std::move(r));
  }
  j["all_pass"] = all_pass(rows);
  return j;
}

}  // namespace hycc::sim
