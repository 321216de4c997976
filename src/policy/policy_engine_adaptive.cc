// PolicyEngine's adaptive decisions: measurements, the cost model and the choice among a rule's
// candidates (see hycc/policy_engine.h and docs/policy.md, "Adaptive rules").
#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "hycc/error.h"
#include "hycc/policy_engine.h"
#include "policy/calibration.h"
#include "policy/compressor_spec.h"
#include "policy/cost_model.h"

namespace hycc {
namespace {

using policy::CodecFigures;
using policy::ModelledTime;
using policy::Path;

// Gradients look like noise; activations and parameters vary smoothly.
DataKind data_of(Dimension d) {
  return policy::carries_gradients(d) ? DataKind::kGaussian : DataKind::kSmooth;
}

const CodecConfig& codec_of(const PolicyDecision& d) {
  return d.gradient ? d.gradient_codec : d.options.codec;
}

// How a candidate runs: error feedback (compress once, allgather) only where the gradient
// compressor runs, i.e. on reductions; elsewhere the codec it wraps.
Path path_of(const PolicyDecision& d, Operation op) {
  if (codec_of(d).id() == CodecId::kNone) return Path::kNative;
  const bool reduction = op == Operation::kAllreduce || op == Operation::kReduceScatter;
  if (!d.gradient || !reduction) return Path::kCodec;
  return policy::two_stage({d.compressor, true}) ? Path::kTwoStage : Path::kErrorFeedback;
}

// One candidate in the explanation: its modelled time (none: its codec rejects the dtype).
std::string choice_line(const PolicyDecision& d, const std::optional<ModelledTime>& t, bool chosen,
                        const CodecFigures& f) {
  if (!t) return detail::concat("    ", d.compressor, ": not usable on this dtype\n");
  const std::string codec = f.usable
                                ? detail::concat(", ratio ", f.ratio, ", codec ", 1e-9 / f.compress,
                                                 " / ", 1e-9 / f.decompress, " GB/s")
                                : "";
  return detail::concat("    ", d.compressor, ": ", t->total() * 1e3, " ms (transfer ",
                        t->transfer * 1e3, ", codec ", t->codec * 1e3, codec, ")",
                        chosen ? "  <- chosen" : "", "\n");
}

}  // namespace

PolicyDecision PolicyEngine::choose(const Communicator& comm, Operation op, size_t bytes,
                                    DType dtype) {
  return choose(comm, op, bytes, dtype, policy_.decide(dimension_of(comm, op), op, bytes, dtype));
}

PolicyDecision PolicyEngine::choose(const Communicator& comm, Operation op, size_t bytes,
                                    DType dtype, PolicyDecision decided) {
  const Dimension dim = dimension_of(comm, op);
  if (decided.rule < 0) return decided;
  const size_t rule = static_cast<size_t>(decided.rule);
  const bool collective = op != Operation::kSendRecv;
  if (!policy_.rules()[rule].adaptive() || bytes == 0 || bytes < decided.threshold_bytes ||
      (collective && comm.size() < 2)) {
    return decided;
  }
  policy::Calibration* cal = nullptr;
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    cal = &policy::calibration_of(comm);
  }
  if (!cal->link) {
    if (!collective) return decided;  // a send cannot measure the link alone
    cal->link = policy::measure_link(comm);
  }

  // The candidates' codec figures: known ones, then the missing ones measured (and for a
  // collective agreed over comm, in candidate order, the same on every rank).
  const size_t n = policy_.candidate_count(rule);
  std::vector<PolicyDecision> candidates;
  std::vector<std::string> keys(n), missing;
  std::vector<CodecFigures> measured;
  for (size_t j = 0; j < n; ++j) {
    candidates.push_back(policy_.decision_for(rule, j));
    if (path_of(candidates[j], op) == Path::kNative) continue;
    keys[j] = policy::codec_key(codec_of(candidates[j]), dtype, data_of(dim));
    const bool known =
        cal->agreed.contains(keys[j]) || (!collective && cal->local.contains(keys[j]));
    if (known || std::find(missing.begin(), missing.end(), keys[j]) != missing.end()) continue;
    missing.push_back(keys[j]);
    measured.push_back(policy::measure_codec(codec_of(candidates[j]), dtype, data_of(dim)));
  }
  if (collective && !missing.empty()) policy::agree(comm, measured);
  for (size_t i = 0; i < missing.size(); ++i) {
    (collective ? cal->agreed : cal->local)[missing[i]] = measured[i];
  }

  // The candidate with the smallest modelled time; ties keep the earlier one.
  size_t best = 0;
  double best_time = std::numeric_limits<double>::infinity();
  std::vector<std::optional<ModelledTime>> times(n);  // none: the codec rejects the dtype
  std::vector<CodecFigures> figures(n);
  for (size_t j = 0; j < n; ++j) {
    const Path path = path_of(candidates[j], op);
    if (path != Path::kNative) {
      const auto agreed = cal->agreed.find(keys[j]);
      figures[j] = agreed != cal->agreed.end() ? agreed->second : cal->local.at(keys[j]);
      if (!figures[j].usable) continue;
    }
    times[j] = policy::modelled_time(op, path, comm.size(), double(bytes), *cal->link, figures[j]);
    if (times[j]->total() < best_time) {
      best_time = times[j]->total();
      best = j;
    }
  }
  PolicyDecision out = candidates[best];
  if (options_.log.decisions) {
    out.choice = detail::concat("  modelled on links of ", cal->link->latency * 1e6, " us, ",
                                cal->link->bandwidth * 1e-9, " GB/s:\n");
    for (size_t j = 0; j < n; ++j) {
      out.choice += choice_line(candidates[j], times[j], j == best, figures[j]);
    }
  }
  return out;
}

LinkFigures PolicyEngine::calibrate(const Communicator& comm) {
  const LinkFigures link = policy::measure_link(comm);
  set_link(comm, link);
  return link;
}

void PolicyEngine::set_link(const Communicator& comm, const LinkFigures& link) {
  if (!(link.latency >= 0) || !(link.bandwidth >= 0)) {
    throw InvalidArgument(tagged("policy", "link figures must not be negative (latency ",
                                 link.latency, " s, bandwidth ", link.bandwidth, " B/s)"));
  }
  const std::lock_guard<std::mutex> lock(*mutex_);
  policy::calibration_of(comm).link = link;
}

std::optional<LinkFigures> PolicyEngine::link(const Communicator& comm) const {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return policy::calibration_of(comm).link;
}

}  // namespace hycc
