#include "measured_run.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "experiment.h"
#include "hycc/error.h"

namespace hycc::sim {
namespace {

using nlohmann::json;

struct Step {
  long line = 0;
  long step = 0;
  bool evaluated = false;
  double step_s = 0, comm_s = 0, compute_s = 0;
  json stats;  // cumulative per-dimension statistics
};

[[noreturn]] void fail(const std::string& source, long line, const std::string& what) {
  throw InvalidArgument(tagged("sim", source, ":", line, ": ", what));
}

double number_at(const json& j, const char* key, const std::string& source, long line) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    fail(source, line, std::string("expected a number '") + key + "'");
  }
  return it->get<double>();
}

long integer_at(const json& j, const char* key, const std::string& source, long line) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    fail(source, line, std::string("the run description has no integer '") + key + "'");
  }
  return it->get<long>();
}

RunDescription parse_description(const json& r, const std::string& source, long line) {
  if (!r.is_object()) fail(source, line, "'run' is not an object");
  RunDescription d;
  const auto text = [&](const char* key) {
    const auto it = r.find(key);
    return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  d.policy = text("policy");
  if (d.policy.empty()) fail(source, line, "the run description names no 'policy'");
  d.policy_source = text("policy_source");
  d.dp = integer_at(r, "dp", source, line);
  d.tp = integer_at(r, "tp", source, line);
  d.pp = integer_at(r, "pp", source, line);
  d.zero = integer_at(r, "zero", source, line);
  d.layers = integer_at(r, "layers", source, line);
  d.hidden = integer_at(r, "hidden", source, line);
  d.heads = integer_at(r, "heads", source, line);
  d.vocabulary = integer_at(r, "vocabulary", source, line);
  d.sequence = integer_at(r, "seq", source, line);
  d.batch = integer_at(r, "batch", source, line);
  d.micro_batches = integer_at(r, "micro_batches", source, line);
  d.ranks = integer_at(r, "ranks", source, line);
  d.ranks_per_node = integer_at(r, "ranks_per_node", source, line);
  if (d.dp < 1 || d.tp < 1 || d.pp < 1 || d.micro_batches < 1 ||
      d.batch % (d.dp * d.micro_batches) != 0) {
    fail(source, line, "the run description's grid or batch is inconsistent");
  }
  const auto net = r.find("network");
  if (net != r.end() && net->is_object()) {
    d.emulated = true;
    d.rate = net->value("rate", std::string());
    d.rate_bits_per_s = number_at(*net, "rate_bits_per_s", source, line);
    d.hosts = net->value("hosts", 0L);
  }
  return d;
}

// Per-rank traffic of one step: the difference of two cumulative statistics.
void add_differences(const json& before, const json& after, long ranks,
                     std::map<std::string, std::vector<double>>& calls,
                     std::map<std::string, std::vector<double>>& raw,
                     std::map<std::string, std::vector<double>>& wire) {
  for (const auto& [dim, now] : after.items()) {
    const auto get = [&](const json& j, const char* key) {
      return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
    };
    const json& then = before.contains(dim) ? before[dim] : json::object();
    const double c = get(now, "calls") - get(then, "calls");
    if (c <= 0) continue;
    calls[dim].push_back(c / double(ranks));
    raw[dim].push_back((get(now, "raw_bytes") - get(then, "raw_bytes")) / double(ranks));
    wire[dim].push_back((get(now, "wire_bytes") - get(then, "wire_bytes")) / double(ranks));
  }
}

}  // namespace

std::string RunDescription::label() const {
  return policy + " @ " + (emulated ? rate : std::string("shared memory"));
}

MeasuredRun parse_measured_run(std::string_view json_lines, std::string source) {
  MeasuredRun out;
  out.source = std::move(source);
  std::vector<Step> steps;
  bool described = false;
  long line_number = 0;
  std::istringstream in{std::string(json_lines)};
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      fail(out.source, line_number, std::string("not JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("step")) {
      fail(out.source, line_number, "expected a hycc-train step object with 'step'");
    }
    if (j.contains("run") && !described) {
      out.run = parse_description(j["run"], out.source, line_number);
      described = true;
    }
    Step s;
    s.line = line_number;
    s.step = static_cast<long>(number_at(j, "step", out.source, line_number));
    s.evaluated = j.contains("val_loss") && !j["val_loss"].is_null();
    s.step_s = number_at(j, "step_s", out.source, line_number);
    s.comm_s = number_at(j, "comm_s", out.source, line_number);
    s.compute_s = number_at(j, "compute_s", out.source, line_number);
    s.stats = j.contains("stats") ? j["stats"] : json::object();
    steps.push_back(std::move(s));
  }
  if (steps.empty()) fail(out.source, line_number, "no steps");
  if (!described) {
    fail(out.source, steps.front().line,
         "no 'run' description in the first JSON line (written by hycc-train since it "
         "describes its runs; docs/training.md)");
  }
  out.steps = static_cast<long>(steps.size());

  // The steps used: after the first tenth (at least one), without evaluation.
  const size_t skip = std::max<size_t>(1, steps.size() / 10);
  std::vector<size_t> used;
  for (size_t i = skip; i < steps.size(); ++i) {
    if (!steps[i].evaluated) used.push_back(i);
  }
  if (used.empty()) {
    for (size_t i = std::min<size_t>(1, steps.size() - 1); i < steps.size(); ++i) used.push_back(i);
  }
  out.steps_used = static_cast<long>(used.size());
  std::vector<double> step_s, comm_s, compute_s;
  std::map<std::string, std::vector<double>> calls, raw, wire;
  for (size_t i : used) {
    step_s.push_back(steps[i].step_s);
    comm_s.push_back(steps[i].comm_s);
    compute_s.push_back(steps[i].compute_s);
    // The previous line's statistics include its evaluation, so the difference is this step's.
    if (i > 0 && steps[i - 1].step == steps[i].step - 1) {
      add_differences(steps[i - 1].stats, steps[i].stats, out.run.ranks, calls, raw, wire);
    }
  }
  out.step_s = median(step_s);
  out.comm_s = median(comm_s);
  out.compute_s = median(compute_s);
  for (const auto& [dim, c] : calls) {
    MeasuredTraffic t;
    t.calls = median(c);
    const double r = median(raw[dim]), w = median(wire[dim]);
    t.message_bytes = t.calls > 0 ? r / t.calls : 0;
    t.ratio = w > 0 ? r / w : 1;
    out.traffic[dim] = t;
  }
  return out;
}

MeasuredRun load_measured_run(const std::string& path) {
  return parse_measured_run(read_text_file(path), path);
}

}  // namespace hycc::sim
