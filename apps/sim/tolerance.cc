#include "tolerance.h"

#include <map>
#include <nlohmann/json.hpp>

#include "../bench/bench_util.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "hycc/policy.h"

namespace hycc::sim {
namespace {

// The codec a compressor spec runs: CODEC of ef+CODEC and ef2+CODEC, canonical.
std::string codec_of(const std::string& compressor) {
  std::string codec = compressor;
  for (const char* prefix : {"ef2+", "ef+"}) {
    if (codec.rfind(prefix, 0) == 0) codec = codec.substr(std::string_view(prefix).size());
  }
  return CodecConfig::parse(codec).spec();
}

bool known_dimension(const std::string& name) {
  for (int d = 0; d < static_cast<int>(Dimension::kOther); ++d) {
    if (name == dimension_name(static_cast<Dimension>(d))) return true;
  }
  return false;
}

bool with_feedback(const std::string& compressor) { return compressor.rfind("ef", 0) == 0; }

// The operation a gradient compressor's rule names (the study's policies did the same).
const char* gradient_operation(const std::string& dimension) {
  return dimension == "zero_grad" ? "reduce_scatter" : "allreduce";
}

}  // namespace

TolerancePolicy policy_from_tolerance(std::string_view summary, const std::string& source,
                                      double budget_percent, const CodecTable& codecs,
                                      DType dtype) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(summary);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(tagged("sim", source, ": not JSON: ", e.what()));
  }
  if (!j.is_object() || !j.contains("cells") || !j["cells"].is_array()) {
    throw InvalidArgument(
        tagged("sim", source, ": expected tools/study's summary.json (an object with \"cells\")"));
  }
  TolerancePolicy out;
  std::map<std::string, TolerancePick> best;  // by dimension, in name order
  for (const auto& cell : j["cells"]) {
    const std::string dim = cell.value("dimension", "");
    const std::string compressor = cell.value("codec", "");
    if (dim.empty() || compressor.empty()) {
      throw InvalidArgument(tagged("sim", source, ": a cell without dimension or codec"));
    }
    if (!known_dimension(dim)) {
      throw InvalidArgument(tagged("sim", source, ": unknown dimension '", dim, "'"));
    }
    best.try_emplace(dim, TolerancePick{dim, "", 0, 1});
    if (!cell.contains("ci95_percent") || cell["ci95_percent"].is_null()) {
      out.notes.push_back(dim + " " + compressor + ": no interval (fewer than 2 seeds)");
      continue;
    }
    const double upper = cell["mean_percent"].get<double>() + cell["ci95_percent"].get<double>();
    if (upper > budget_percent) continue;
    double ratio = 1;
    try {
      ratio = codecs.find(codec_of(compressor), dtype).ratio;
    } catch (const InvalidArgument& e) {
      out.notes.push_back(dim + " " + compressor + ": skipped, " + e.what());
      continue;
    }
    TolerancePick& b = best[dim];
    if (b.compressor.empty() || ratio > b.ratio) b = {dim, compressor, upper, ratio};
  }
  // ZeRO's gradient reduce-scatter carries the data-parallel gradients: unmeasured, it takes dp's.
  if (best.count("zero_grad") == 0 && best.count("dp") != 0 && !best["dp"].compressor.empty()) {
    TolerancePick p = best["dp"];
    p.dimension = "zero_grad";
    best.emplace("zero_grad", p);
    out.notes.push_back("zero_grad: not measured, takes dp's pick (the same gradients)");
  }
  out.toml = bench::format(
      "name = \"study-budget\"\ndescription = \"per dimension the strongest compressor whose loss "
      "gap stays within %g%% at the upper end of its 95%% interval (%s)\"\n",
      budget_percent, source.c_str());
  for (const auto& [dim, pick] : best) {
    out.picks.push_back(pick);
    if (pick.compressor.empty()) continue;
    out.toml += "\n[[rule]]\ndimension = \"" + dim + "\"\n";
    if (with_feedback(pick.compressor)) {
      out.toml += std::string("operation = \"") + gradient_operation(dim) + "\"\n";
    }
    out.toml += "compressor = \"" + pick.compressor + "\"\n";
  }
  out.toml += "\n[[rule]]\ndimension = \"default\"\ncompressor = \"none\"\n";
  return out;
}

}  // namespace hycc::sim
