#include "sweep.h"

#include <charconv>
#include <cmath>

#include "../bench/bench_util.h"
#include "hycc/error.h"

namespace hycc::sim {
namespace {

double parse_number(std::string_view text, std::string_view spec) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v > 0) || !std::isfinite(v)) {
    throw InvalidArgument(
        tagged("sim", "sweep '", spec, "': '", text, "' is not a positive number"));
  }
  return v;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

const char* sweep_key_name(SweepKey k) { return k == SweepKey::kNodes ? "nodes" : "bandwidth"; }

SweepSpec parse_sweep(std::string_view spec) {
  SweepSpec s;
  const size_t eq = spec.find('=');
  const std::string_view key = spec.substr(0, eq);
  if (eq == std::string_view::npos || (key != "nodes" && key != "bandwidth")) {
    throw InvalidArgument(tagged("sim", "sweep '", spec,
                                 "': expected nodes=VALUES or bandwidth=VALUES (Gbit/s), VALUES "
                                 "a list of numbers or first:last[:step] ranges"));
  }
  s.key = key == "nodes" ? SweepKey::kNodes : SweepKey::kBandwidth;
  for (std::string_view item : split(spec.substr(eq + 1), ',')) {
    const auto range = split(item, ':');
    if (range.size() == 1) {
      s.values.push_back(parse_number(item, spec));
      continue;
    }
    if (range.size() > 3)
      throw InvalidArgument(tagged("sim", "sweep '", spec, "': bad range '", item, "'"));
    const double first = parse_number(range[0], spec), last = parse_number(range[1], spec);
    const double step = range.size() == 3 ? parse_number(range[2], spec) : 1;
    if (last < first || (last - first) / step > 10000) {
      throw InvalidArgument(tagged("sim", "sweep '", spec, "': range '", item,
                                   "' must go up, in at most 10000 steps"));
    }
    for (double v = first; v <= last * (1 + 1e-12); v += step) s.values.push_back(v);
  }
  if (s.key == SweepKey::kNodes) {
    for (double v : s.values) {
      if (v != std::floor(v)) {
        throw InvalidArgument(
            tagged("sim", "sweep '", spec, "': node count ", v, " is not an integer"));
      }
    }
  }
  return s;
}

std::vector<SweepPoint> run_sweep(const SweepSpec& spec, const ModelConfig& model,
                                  const ClusterConfig& cluster, const LayoutConfig& layout,
                                  const std::vector<SimPolicy>& policies,
                                  std::vector<std::string>& skipped) {
  std::vector<SweepPoint> points;
  for (double v : spec.values) {
    ClusterConfig c = cluster;
    LayoutConfig l = layout;
    if (spec.key == SweepKey::kNodes) {
      c.nodes = static_cast<long>(v);
      l.dp = 0;
      if (c.gpus() % (l.tp * l.pp) != 0) {
        skipped.push_back(bench::format("nodes=%ld: %ld GPUs are not a multiple of tp x pp = %ld",
                                        c.nodes, c.gpus(), l.tp * l.pp));
        continue;
      }
    } else {
      c.inter_node.bandwidth = v * 1e9 / 8;
    }
    check_fit(model, c, l);
    points.push_back({v, compare_policies(model, c, l, policies)});
  }
  return points;
}

std::string sweep_csv(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  std::string s = std::string(spec.key == SweepKey::kNodes ? "nodes" : "bandwidth_gbit_per_s") +
                  ",policy,iteration_s,compute_s,bubble_s,tp_s,pp_s,dp_s,codec_s,tflops_per_gpu,"
                  "samples_per_s,speedup\n";
  for (const SweepPoint& p : points) {
    for (const PolicyRun& r : p.runs) {
      const Breakdown& b = r.result.time;
      s += bench::format("%g,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", p.value,
                         r.policy.c_str(), b.iteration, b.compute, b.bubble, b.tp, b.pp, b.dp,
                         b.codec, r.result.tflops_per_gpu, r.result.samples_per_second, r.speedup);
    }
  }
  return s;
}

std::string gnuplot_script(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                           const std::string& csv_path, const std::string& png_path) {
  std::string s = "set terminal pngcairo size 900,600\n";
  s += "set output '" + png_path + "'\n";
  s += "set key left top\nset grid\n";
  s += "set ylabel 'speedup over uncompressed (iteration time ratio)'\n";
  if (spec.key == SweepKey::kNodes) {
    s += "set xlabel 'nodes'\n";
  } else {
    s += "set xlabel 'inter-node bandwidth per node (Gbit/s)'\nset logscale x\n";
  }
  // One inline data block per policy (value, speedup), so that each policy is one line.
  const std::vector<PolicyRun>& runs = points.empty() ? std::vector<PolicyRun>{} : points[0].runs;
  std::string plot = "plot ";
  for (size_t i = 0; i < runs.size(); ++i) {
    s += bench::format("$policy%zu << EOD\n", i);
    for (const SweepPoint& p : points) s += bench::format("%g %.6g\n", p.value, p.runs[i].speedup);
    s += "EOD\n";
    plot += bench::format("%s$policy%zu using 1:2 with linespoints title '%s'", i == 0 ? "" : ", ",
                          i, runs[i].policy.c_str());
  }
  s += "# data: " + csv_path + "\n" + plot;
  return s + "\n";
}

}  // namespace hycc::sim
