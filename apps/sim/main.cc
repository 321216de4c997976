// hycc-sim: the performance model of one training iteration at cluster scale (docs/sim.md).
// Reads an experiment (model, cluster, layout, codec figures, policies), applies the command
// line's overrides, and prints the iteration breakdown and the bytes per dimension of every
// policy with its speedup over the uncompressed baseline; or sweeps nodes or bandwidth.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>

#include <CLI/CLI.hpp>

#include "../bench/bench_util.h"
#include "experiment.h"
#include "hycc/config.h"
#include "hycc/error.h"
#include "measured_run.h"
#include "report.h"
#include "sweep.h"
#include "tolerance.h"
#include "toml_fields.h"
#include "validation.h"

namespace {

using namespace hycc::sim;

struct Options {
  std::string experiment;  // empty: neox20b, or tiny-netemu with --measured
  std::string model, cluster, layout;
  std::vector<std::string> policies, codec_json;
  std::string tolerance;     // tools/study's summary.json: adds the policy study-budget
  double loss_budget = 0.5;  // percent
  long nodes = 0, gpus_per_node = 0, tp = 0, pp = 0, dp = 0, zero = -1;
  long micro_batch = 0, micro_batches = 0;
  double gpu_tflops = 0;
  double codec_scale = 1;
  bool free_codec = false;
  std::string inter_bandwidth, intra_bandwidth, inter_latency, intra_latency;
  std::string recompute, overlap_dp, dtype;
  std::string json, sweep, csv, plot;
  std::vector<std::string> measured;        // hycc-train --json files to validate against
  std::vector<std::string> calibration;     // baseline runs: shared memory or netemu at 10gbit
  std::string calibrate_on = "step";        // step | compute (CalibrationBasis)
  std::string calibrate_per = "directory";  // directory | all (CalibrationMatch)
  bool no_plot = false, list = false;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw hycc::Error(hycc::tagged("sim", "cannot write '", path, "'"));
}

void apply_overrides(const Options& o, ClusterConfig& c, LayoutConfig& l) {
  if (o.nodes > 0) c.nodes = o.nodes;
  if (o.gpus_per_node > 0) c.gpus_per_node = o.gpus_per_node;
  if (o.gpu_tflops > 0) c.gpu_flops = o.gpu_tflops * 1e12;
  if (!o.inter_bandwidth.empty())
    c.inter_node.bandwidth = parse_bandwidth(o.inter_bandwidth, "--inter-bandwidth");
  if (!o.intra_bandwidth.empty())
    c.intra_node.bandwidth = parse_bandwidth(o.intra_bandwidth, "--intra-bandwidth");
  if (!o.inter_latency.empty())
    c.inter_node.latency = parse_duration(o.inter_latency, "--inter-latency");
  if (!o.intra_latency.empty())
    c.intra_node.latency = parse_duration(o.intra_latency, "--intra-latency");
  if (o.tp > 0) l.tp = o.tp;
  if (o.pp > 0) l.pp = o.pp;
  // A new cluster size or model-parallel shape rederives dp unless --dp is given.
  if (o.nodes > 0 || o.gpus_per_node > 0 || o.tp > 0 || o.pp > 0) l.dp = 0;
  if (o.dp > 0) l.dp = o.dp;
  if (o.zero >= 0) l.zero_stage = static_cast<int>(o.zero);
  if (o.micro_batch > 0) l.micro_batch = o.micro_batch;
  if (o.micro_batches > 0) l.micro_batches = o.micro_batches;
  if (!o.recompute.empty()) l.activation_recompute = o.recompute == "on";
  if (!o.overlap_dp.empty()) l.overlap_dp = o.overlap_dp == "on";
  if (!o.dtype.empty()) l.dtype = hycc::parse_dtype(o.dtype);
}

void list_configs() {
  for (const char* kind :
       {"experiments", "models", "clusters", "layouts", "sim-policies", "codec-figures"}) {
    std::printf("%-14s", kind);
    for (const auto& n : config_names(kind)) std::printf(" %s", n.c_str());
    std::printf("\n");
  }
  std::printf("%-14s", "hycc presets");
  for (const auto& n : hycc::Policy::preset_names()) std::printf(" %s", n.c_str());
  std::printf("\n");
}

// The layout and cluster size a measured run ran with (tools/experiment --grid, --ranks-per-host):
// its grid, ZeRO stage and micro-batches, and its netemu hosts of ranks_per_node ranks. Returns
// whether that changed anything.
bool take_layout_of(const RunDescription& run, ClusterConfig& cluster, LayoutConfig& layout) {
  if (run.dp == layout.dp && run.tp == layout.tp && run.pp == layout.pp &&
      run.zero == layout.zero_stage && run.micro_batches == layout.micro_batches &&
      run.micro_batch() == layout.micro_batch && run.hosts == cluster.nodes &&
      run.ranks_per_node == cluster.gpus_per_node) {
    return false;
  }
  layout.name = hycc::bench::format("dp%ld-tp%ld-pp%ld (from the runs)", run.dp, run.tp, run.pp);
  layout.dp = run.dp;
  layout.tp = run.tp;
  layout.pp = run.pp;
  layout.zero_stage = static_cast<int>(run.zero);
  layout.micro_batches = run.micro_batches;
  layout.micro_batch = run.micro_batch();
  cluster.name += hycc::bench::format(" with %ld nodes of %ld", run.hosts, run.ranks_per_node);
  cluster.nodes = run.hosts;
  cluster.gpus_per_node = run.ranks_per_node;
  return true;
}

// --measured: the model against hycc-train runs on tools/netemu (docs/sim.md, "Validation").
int validate_measured(const Options& o, const ModelConfig& model, ClusterConfig cluster,
                      LayoutConfig layout, const CodecTable& codecs) {
  if (o.calibration.empty()) {
    throw hycc::InvalidArgument(
        hycc::tagged("sim",
                     "--measured needs --calibration FILE: a baseline run that gives the compute "
                     "speed (tools/experiment's calibration-fast.jsonl or calibration-shm.jsonl)"));
  }
  std::vector<MeasuredRun> calibration_runs;
  for (const auto& path : o.calibration) calibration_runs.push_back(load_measured_run(path));
  std::vector<MeasuredRun> runs;
  for (const auto& path : o.measured) runs.push_back(load_measured_run(path));
  const bool layout_given = o.nodes > 0 || o.gpus_per_node > 0 || o.tp > 0 || o.pp > 0 ||
                            o.dp > 0 || o.zero >= 0 || o.micro_batch > 0 || o.micro_batches > 0;
  const bool layout_from_runs = !layout_given && !runs.empty() && runs.front().run.emulated &&
                                take_layout_of(runs.front().run, cluster, layout);
  check_fit(model, cluster, layout);
  const CalibrationSet calibration = calibrate_for(
      calibration_runs, runs,
      o.calibrate_per == "all" ? CalibrationMatch::kAll : CalibrationMatch::kDirectory, model,
      cluster, layout,
      o.calibrate_on == "step" ? CalibrationBasis::kStepTime : CalibrationBasis::kComputeTime);
  const PolicyLookup policy_of = [&](const RunDescription& run) {
    SimPolicy p = load_policy(run.policy_source.empty() ? run.policy : run.policy_source, codecs);
    p.scale_codec_throughput(o.free_codec ? HUGE_VAL : o.codec_scale);
    return p;
  };
  const auto rows = validate(model, cluster, layout, calibration, runs, policy_of);
  std::printf("# hycc-sim %s: validation against measured hycc-train runs\n", HYCC_VERSION);
  ClusterConfig shown = cluster;
  shown.gpu_flops = calibration.of(0).gpu_flops;
  std::printf("%s", describe_setup(model, shown, layout,
                                   rows.empty() ? IterationResult{} : rows.front().prediction)
                        .c_str());
  if (layout_from_runs) {
    std::printf(
        "# grid, micro-batches and nodes from the first run's description (flags such as "
        "--dp, --nodes override)\n");
  }
  std::printf("# inter-node bandwidth: each run's netemu rate per host link and direction\n");
  if (calibration.calibrations.size() > 1) {
    std::printf("# compute speed: each run's calibration (column cal; 0: all calibration runs)\n");
  }
  std::printf("#\n");
  std::printf("%s", validation_table(calibration, rows, {}).c_str());
  std::printf("#\n# message size and compression ratio per dimension, model vs statistics\n");
  std::printf("%s", traffic_check_table(rows).c_str());
  if (!o.json.empty()) {
    hycc::bench::write_json(o.json, validation_json(calibration, rows, {}));
    std::printf("# wrote %s\n", o.json.c_str());
  }
  return 0;
}

int run(const Options& o) {
  if (o.list) {
    list_configs();
    return 0;
  }
  const std::string experiment = !o.experiment.empty() ? o.experiment
                                 : o.measured.empty()  ? "neox20b"
                                                       : "tiny-netemu";
  const ExperimentSpec spec = load_experiment(experiment);
  const ModelConfig model = load_model(o.model.empty() ? spec.model : o.model);
  ClusterConfig cluster = load_cluster(o.cluster.empty() ? spec.cluster : o.cluster);
  LayoutConfig layout = load_layout(o.layout.empty() ? spec.layout : o.layout);
  apply_overrides(o, cluster, layout);
  std::vector<std::string> codec_sources = spec.codec_figures;
  codec_sources.insert(codec_sources.end(), o.codec_json.begin(), o.codec_json.end());
  const CodecTable codecs = load_codec_figures(codec_sources);
  std::vector<SimPolicy> policies;
  for (const auto& p : o.policies.empty() ? spec.policies : o.policies) {
    policies.push_back(load_policy(p, codecs));
    policies.back().scale_codec_throughput(o.free_codec ? HUGE_VAL : o.codec_scale);
  }
  std::string tolerance_lines;
  if (!o.tolerance.empty()) {
    const TolerancePolicy t = policy_from_tolerance(read_text_file(o.tolerance), o.tolerance,
                                                    o.loss_budget, codecs, layout.dtype);
    policies.push_back(
        SimPolicy::from_policy(hycc::Policy::parse_toml(t.toml, "study-budget"), codecs));
    policies.back().scale_codec_throughput(o.free_codec ? HUGE_VAL : o.codec_scale);
    tolerance_lines = hycc::bench::format(
        "# study-budget: per dimension the strongest compressor of %s whose loss gap stays "
        "within %g%% (upper end of its 95%% interval)\n",
        o.tolerance.c_str(), o.loss_budget);
    for (const TolerancePick& p : t.picks) {
      tolerance_lines +=
          p.compressor.empty()
              ? hycc::bench::format("#   %-10s  none: no compressor fits\n", p.dimension.c_str())
              : hycc::bench::format("#   %-10s  %s (gap <= %+.2f%%, ratio %.2f on %s)\n",
                                    p.dimension.c_str(), p.compressor.c_str(), p.upper_percent,
                                    p.ratio, std::string(hycc::dtype_name(layout.dtype)).c_str());
    }
    for (const auto& note : t.notes) tolerance_lines += "#   (" + note + ")\n";
  }

  if (!o.measured.empty()) return validate_measured(o, model, cluster, layout, codecs);

  if (!o.sweep.empty()) {
    const SweepSpec sweep = parse_sweep(o.sweep);
    std::vector<std::string> skipped;
    const auto points = run_sweep(sweep, model, cluster, layout, policies, skipped);
    for (const auto& note : skipped) std::printf("# skipped %s\n", note.c_str());
    const std::string csv =
        o.csv.empty() ? std::string("hycc-sim-") + sweep_key_name(sweep.key) + ".csv" : o.csv;
    write_text(csv, sweep_csv(sweep, points));
    std::printf("# wrote %s (%zu rows)\n", csv.c_str(), points.size() * policies.size());
    std::fflush(stdout);
    if (o.no_plot) return 0;
    const std::string png = o.plot.empty() ? csv.substr(0, csv.rfind('.')) + ".png" : o.plot;
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
      std::printf(
          "# gnuplot not found: skipped the plot %s (scripts/setup-deps installs "
          "gnuplot-nox)\n",
          png.c_str());
      return 0;
    }
    const std::string script = png + ".gp";
    write_text(script, gnuplot_script(sweep, points, csv, png));
    if (std::system(("gnuplot '" + script + "'").c_str()) != 0) {
      throw hycc::Error(hycc::tagged("sim", "gnuplot failed on ", script));
    }
    std::printf("# wrote %s (gnuplot script %s)\n", png.c_str(), script.c_str());
    return 0;
  }

  check_fit(model, cluster, layout);
  const std::vector<PolicyRun> runs = compare_policies(model, cluster, layout, policies);
  std::printf("# hycc-sim %s: experiment %s%s%s\n", HYCC_VERSION, spec.name.c_str(),
              spec.description.empty() ? "" : ": ", spec.description.c_str());
  std::printf("%s", describe_setup(model, cluster, layout, runs.front().result).c_str());
  if (!codecs.sources().empty()) {
    std::string sources;
    for (const auto& s : codecs.sources()) sources += " " + s;
    std::printf("# codec figures:%s\n", sources.c_str());
  }
  if (o.free_codec) {
    std::printf(
        "# codec throughput: free (--free-codec: compression ratios only, no codec time)\n");
  } else if (o.codec_scale != 1) {
    std::printf("# codec throughput: measured figures x %g (--codec-scale)\n", o.codec_scale);
  }
  std::printf("%s", tolerance_lines.c_str());
  std::printf("#\n# iteration time (s) and its parts; speedup = baseline time / policy time\n");
  std::printf("%s", breakdown_table(runs).c_str());
  std::printf("#\n# traffic per GPU per iteration (MB = 1e6 bytes)\n");
  std::printf("%s", traffic_table(runs).c_str());
  if (!o.json.empty()) {
    hycc::bench::write_json(o.json, to_json(model, cluster, layout, runs));
    std::printf("# wrote %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hycc-sim " HYCC_VERSION
               ": iteration time of 3D-parallel LLM training under compression policies"};
  Options o;
  app.add_option("--preset,--experiment", o.experiment,
                 "experiment: a built-in name (--list) or a TOML file (default neox20b; "
                 "tiny-netemu with --measured)");
  app.add_option("--model", o.model,
                 "model: built-in name or TOML file (overrides the experiment's)");
  app.add_option("--cluster", o.cluster, "cluster: built-in name or TOML file");
  app.add_option("--layout", o.layout, "parallel layout: built-in name or TOML file");
  app.add_option("--policy", o.policies,
                 "policy, repeatable (replaces the experiment's): a hycc preset, a built-in "
                 "figures file, or a hycc policy / figures TOML file");
  app.add_option("--tolerance", o.tolerance,
                 "tools/study's summary.json: adds the policy study-budget, per dimension the "
                 "strongest compressor whose loss gap stays within --loss-budget")
      ->check(CLI::ExistingFile);
  app.add_option("--loss-budget", o.loss_budget,
                 "largest validation-loss gap in percent at the upper end of a cell's 95% "
                 "interval (--tolerance; default 0.5)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--codec-json", o.codec_json,
                 "output of hycc-bench codec --json, repeatable (added to the experiment's)");
  app.add_option("--nodes", o.nodes, "nodes")->check(CLI::PositiveNumber);
  app.add_option("--gpus-per-node", o.gpus_per_node, "GPUs per node")->check(CLI::PositiveNumber);
  app.add_option("--gpu-tflops", o.gpu_tflops, "achieved TFLOPS per GPU")
      ->check(CLI::PositiveNumber);
  app.add_option("--inter-bandwidth", o.inter_bandwidth,
                 "per-node network bandwidth, e.g. '100 Gbit/s'");
  app.add_option("--intra-bandwidth", o.intra_bandwidth,
                 "per-GPU intra-node bandwidth, e.g. '75 GB/s'");
  app.add_option("--inter-latency", o.inter_latency, "network latency per message, e.g. '5 us'");
  app.add_option("--intra-latency", o.intra_latency, "intra-node latency per message");
  app.add_option("--tp", o.tp, "tensor-parallel size")->check(CLI::PositiveNumber);
  app.add_option("--pp", o.pp, "pipeline stages")->check(CLI::PositiveNumber);
  app.add_option("--dp", o.dp, "data-parallel size (default: what the cluster leaves)")
      ->check(CLI::PositiveNumber);
  app.add_option("--zero", o.zero, "ZeRO stage 0, 1 or 2")->check(CLI::Range(0, 2));
  app.add_option("--micro-batch", o.micro_batch, "samples per micro-batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--micro-batches", o.micro_batches, "micro-batches per iteration")
      ->check(CLI::PositiveNumber);
  app.add_option("--recompute", o.recompute, "activation recompute")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--overlap-dp", o.overlap_dp, "gradient reduction overlaps the last backward")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--dtype", o.dtype, "element type sent: f32, bf16 or f16");
  app.add_option("--codec-scale", o.codec_scale,
                 "multiply every codec throughput by X (e.g. a GPU against the measuring CPU)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--free-codec", o.free_codec, "codecs take no time (ratios only): an upper bound");
  app.add_option("--json", o.json, "also write the results as JSON to FILE");
  app.add_option("--sweep", o.sweep,
                 "nodes=FIRST:LAST[:STEP] or bandwidth=V1,V2,... (Gbit/s per node): CSV and PNG");
  app.add_option("--csv", o.csv, "sweep CSV file (default hycc-sim-KEY.csv)");
  app.add_option("--plot", o.plot, "sweep PNG file (default: the CSV's name with .png)");
  app.add_flag("--no-plot", o.no_plot, "sweep without the plot");
  app.add_option("--measured", o.measured,
                 "hycc-train --json files of runs on tools/netemu (one per policy and rate): "
                 "compare the model with them")
      ->expected(1, -1);
  app.add_option(
         "--calibration", o.calibration,
         "with --measured: baseline hycc-train runs, on shared memory or on netemu at a rate "
         "far above the validated ones (compute speed; several: the median of their speeds)")
      ->expected(1, -1);
  app.add_option("--calibrate-on", o.calibrate_on,
                 "with --measured: the calibration run's median compute_s (compute) or step "
                 "time (step: the model of that run reproduces it)")
      ->check(CLI::IsMember({"compute", "step"}))
      ->capture_default_str();
  app.add_option("--calibrate-per", o.calibrate_per,
                 "with --measured: a run takes the calibration runs of its own directory "
                 "(directory: one tools/experiment report, whose calibrations ran in its rounds; "
                 "all of them when its directory has none) or all of them (all)")
      ->check(CLI::IsMember({"directory", "all"}))
      ->capture_default_str();
  app.add_flag("--list", o.list, "list the built-in experiments, models, clusters, ...");
  app.set_version_flag("--version", "hycc-sim " HYCC_VERSION HYCC_BUILD_KIND);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const hycc::Error& e) {
    std::fprintf(stderr, "hycc-sim: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hycc-sim: unexpected error: %s\n", e.what());
    return 3;
  }
}
