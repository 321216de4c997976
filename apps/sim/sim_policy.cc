#include "sim_policy.h"

#include <cmath>

#include "hycc/error.h"
#include "policy/compressor_spec.h"
#include "toml_fields.h"

namespace hycc::sim {

Operation operation_of(Dimension d) {
  switch (d) {
    case Dimension::kPp:
      return Operation::kSendRecv;
    case Dimension::kZeroGrad:
      return Operation::kReduceScatter;
    case Dimension::kZeroParam:
      return Operation::kAllgather;
    default:
      return Operation::kAllreduce;
  }
}

Collective collective_of(Dimension d) {
  switch (operation_of(d)) {
    case Operation::kSendRecv:
      return Collective::kSendRecv;
    case Operation::kReduceScatter:
      return Collective::kReduceScatter;
    case Operation::kAllgather:
      return Collective::kAllgather;
    default:
      return Collective::kAllreduce;
  }
}

SimPolicy SimPolicy::baseline() {
  SimPolicy p;
  p.name_ = "baseline";
  p.description_ = "nothing compressed";
  p.given_[static_cast<int>(Dimension::kOther)] = CodecFigures{};
  return p;
}

SimPolicy SimPolicy::parse_figures(std::string_view toml, std::string source) {
  const TomlFields f(toml, std::move(source));
  f.require_known(
      {"name", "description", "default", "tp", "pp", "dp", "zero_grad", "zero_param", "embedding"});
  SimPolicy p;
  p.name_ = f.text("name", f.source());
  p.description_ = f.text("description", "");
  p.given_[static_cast<int>(Dimension::kOther)] = CodecFigures{};
  for (int d = 0; d <= static_cast<int>(Dimension::kOther); ++d) {
    const bool is_default = d == static_cast<int>(Dimension::kOther);
    const std::string key = is_default ? "default" : dimension_name(static_cast<Dimension>(d));
    if (!f.has(key)) continue;
    const toml::table* t = f.table().get_as<toml::table>(key);
    if (t == nullptr) f.fail(key, "'" + key + "' must be a table ([" + key + "])");
    const TomlFields df(*t, f.source(), key);
    df.require_known({"codec", "ratio", "compress_gbps", "decompress_gbps"});
    CodecFigures c;
    c.ratio = df.number("ratio", 1e-3, 1e9);
    c.codec = df.text("codec", c.ratio == 1 && !df.has("compress_gbps") ? "none" : "given");
    c.compress_bandwidth = df.number("compress_gbps", 1e-9, 1e9, 0) * 1e9;
    c.decompress_bandwidth = df.number("decompress_gbps", 1e-9, 1e9, 0) * 1e9;
    p.given_[d] = c;
  }
  return p;
}

SimPolicy SimPolicy::from_policy(Policy policy, CodecTable codecs) {
  SimPolicy p;
  p.name_ = policy.name();
  p.description_ = policy.description();
  p.policy_ = std::move(policy);
  p.codecs_ = std::move(codecs);
  return p;
}

CodecFigures SimPolicy::scaled(CodecFigures c) const {
  if (std::isinf(codec_scale_)) {
    c.compress_bandwidth = c.decompress_bandwidth = 0;  // free
  } else {
    c.compress_bandwidth *= codec_scale_;
    c.decompress_bandwidth *= codec_scale_;
  }
  return c;
}

CodecFigures SimPolicy::figures(Dimension d, double bytes, DType dtype,
                                const GroupLinks& links) const {
  if (!policy_) {
    const auto& own = given_[static_cast<int>(d)];
    return scaled(own ? *own : *given_[static_cast<int>(Dimension::kOther)]);
  }
  const PolicyDecision decision =
      policy_->decide(d, operation_of(d), static_cast<size_t>(bytes), dtype);
  if (decision.rule < 0 || !policy_->rules()[size_t(decision.rule)].adaptive()) {
    return figures_of(decision, d, bytes, dtype);
  }
  // An adaptive rule: the candidate with the smallest modelled time on these links, as the
  // engine chooses with measured figures (ties keep the earlier candidate).
  const size_t rule = static_cast<size_t>(decision.rule);
  CodecFigures best;
  double best_time = 0;
  for (size_t j = 0; j < policy_->candidate_count(rule); ++j) {
    const CodecFigures c = figures_of(policy_->decision_for(rule, j), d, bytes, dtype);
    const double t = collective_time(collective_of(d), bytes, links, c).total();
    if (j == 0 || t < best_time) {
      best = c;
      best_time = t;
    }
  }
  return best;
}

CodecFigures SimPolicy::figures_of(const PolicyDecision& decision, Dimension d, double bytes,
                                   DType dtype) const {
  if (decision.compressor == "none" || bytes < double(decision.threshold_bytes)) {
    return CodecFigures{};
  }
  std::string codec = decision.compressor;
  Feedback feedback = Feedback::kNone;
  if (decision.gradient) {
    // ef+CODEC and ef2+CODEC take CODEC's figures (error feedback adds element-wise work the
    // codec figures do not count); the other gradient compressors have none.
    const policy::CompressorSpec spec{decision.compressor, true};
    if (!policy::error_feedback(spec)) {
      throw InvalidArgument(tagged("sim", "policy '", name_, "': gradient compressor '", codec,
                                   "' on ", dimension_name(d),
                                   " has no codec figures; give its ratio and throughput in a "
                                   "figures file (docs/sim.md)"));
    }
    codec = decision.gradient_codec.spec();
    feedback = policy::two_stage(spec) ? Feedback::kTwoStage : Feedback::kCompressOnce;
  }
  CodecFigures c = codecs_.find(codec, dtype);
  c.codec = decision.compressor;
  c.feedback = feedback;
  return scaled(c);
}

}  // namespace hycc::sim
