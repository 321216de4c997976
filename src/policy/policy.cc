// Policy: names, rule matching, decisions, explanations, presets and the environment (see
// hycc/policy.h). The TOML reader is policy_toml.cc.
#include "hycc/policy.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/byte_size.h"
#include "hycc/error.h"
#include "policy/presets.h"

namespace hycc {
namespace {

// A TOML basic string holding `text` (valid UTF-8, as parse_toml read it): quotes, backslashes
// and control characters escaped.
std::string toml_quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string size_range(const PolicyRule& r) {
  const std::string lo = format_byte_size(r.min_bytes);
  const std::string hi = r.max_bytes == SIZE_MAX ? "inf" : format_byte_size(r.max_bytes);
  return "[" + lo + ", " + hi + ")";
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& s : items) out += detail::concat(out.empty() ? "" : separator, s);
  return out;
}

std::string rule_summary(const PolicyRule& r) {
  const std::string alternatives =
      r.adaptive() ? detail::concat(" or, by measurement, ", joined(r.alternatives, ", ")) : "";
  return detail::concat("dimension ", r.dimension ? dimension_name(*r.dimension) : "default",
                        ", operation ", r.operation ? operation_name(*r.operation) : "any",
                        r.dtype ? detail::concat(", dtype ", dtype_name(*r.dtype)) : "", ", bytes ",
                        size_range(r), " -> ", r.compressor, alternatives, " (threshold ",
                        format_byte_size(r.threshold_bytes), ")");
}

// Why rule `r` does not match, or "" if it does.
std::string mismatch(const PolicyRule& r, Dimension d, Operation op, size_t bytes, DType dtype) {
  if (r.dimension && *r.dimension != d) {
    return detail::concat("dimension is ", dimension_name(d), ", not ",
                          dimension_name(*r.dimension));
  }
  if (r.operation && *r.operation != op) {
    return detail::concat("operation is ", operation_name(op), ", not ",
                          operation_name(*r.operation));
  }
  if (r.dtype && *r.dtype != dtype) {
    return detail::concat("dtype is ", dtype_name(dtype), ", not ", dtype_name(*r.dtype));
  }
  if (bytes < r.min_bytes || bytes >= r.max_bytes) {
    return detail::concat(bytes, " bytes is outside ", size_range(r));
  }
  return "";
}

}  // namespace

const char* dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kDp:
      return "dp";
    case Dimension::kTp:
      return "tp";
    case Dimension::kPp:
      return "pp";
    case Dimension::kZeroParam:
      return "zero_param";
    case Dimension::kZeroGrad:
      return "zero_grad";
    case Dimension::kEmbedding:
      return "embedding";
    case Dimension::kOther:
      return "other";
  }
  return "?";
}

Dimension dimension_of(const Communicator& comm, Operation op) {
  return dimension_of(comm.name(), op);
}

Dimension dimension_of(std::string_view n, Operation op) {
  if (n == "dp") return Dimension::kDp;
  if (n == "tp") return Dimension::kTp;
  if (n == "pp") return Dimension::kPp;
  if (n == "embedding") return Dimension::kEmbedding;
  if (n == "zero") {
    return op == Operation::kAllreduce || op == Operation::kReduceScatter ? Dimension::kZeroGrad
                                                                          : Dimension::kZeroParam;
  }
  return Dimension::kOther;
}

bool PolicyRule::matches(Dimension d, Operation op, size_t bytes, DType element_type) const {
  return mismatch(*this, d, op, bytes, element_type).empty();
}

Policy::Policy() = default;

PolicyDecision Policy::decide(Dimension d, Operation op, size_t bytes, DType dtype) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].matches(d, op, bytes, dtype)) return decision_for(i, 0);
  }
  PolicyDecision out;
  out.compressor = "none";
  return out;
}

PolicyDecision Policy::decision_for(size_t rule, size_t candidate) const {
  const PolicyRule& r = rules_.at(rule);
  const Candidate& c = candidates_.at(rule).at(candidate);
  PolicyDecision out;
  out.rule = static_cast<int>(rule);
  out.candidate = static_cast<int>(candidate);
  out.compressor = c.compressor;
  out.gradient = c.gradient;
  out.threshold_bytes = r.threshold_bytes;
  out.options.threshold_bytes = r.threshold_bytes;
  (c.gradient ? out.gradient_codec : out.options.codec) = c.codec;
  return out;
}

bool Policy::adaptive() const {
  for (const PolicyRule& r : rules_) {
    if (r.adaptive()) return true;
  }
  return false;
}

std::string Policy::explain(Dimension d, Operation op, size_t bytes, DType dtype) const {
  std::string out =
      detail::concat("policy '", name_, "': ", operation_name(op), " of ", bytes, " bytes of ",
                     dtype_name(dtype), " on dimension ", dimension_name(d), "\n");
  for (size_t i = 0; i < rules_.size(); ++i) {
    const PolicyRule& r = rules_[i];
    const std::string why = mismatch(r, d, op, bytes, dtype);
    if (!why.empty()) {
      out += detail::concat("  rule ", i + 1, " (", r.origin, ") skipped: ", why, "\n");
      continue;
    }
    out += detail::concat("  rule ", i + 1, " (", r.origin, ") matches: ", rule_summary(r), "\n");
    out +=
        bytes < r.threshold_bytes
            ? detail::concat("  -> below the threshold: native MPI call, uncompressed\n")
            : detail::concat("  -> ", r.gradient ? "gradient compressor " : "codec ", r.compressor,
                             r.adaptive() ? " (a PolicyEngine may measure and choose an "
                                            "alternative)"
                                          : "",
                             "\n");
    return out;
  }
  return out + "  -> no rule matches: uncompressed\n";
}

std::string Policy::to_toml() const {
  std::string out = detail::concat("name = ", toml_quoted(name_), "\n");
  if (!description_.empty())
    out += detail::concat("description = ", toml_quoted(description_), "\n");
  for (const PolicyRule& r : rules_) {
    out += detail::concat("\n[[rule]]\ndimension = \"",
                          r.dimension ? dimension_name(*r.dimension) : "default", "\"\n");
    if (r.operation) out += detail::concat("operation = \"", operation_name(*r.operation), "\"\n");
    if (r.dtype) out += detail::concat("dtype = \"", dtype_name(*r.dtype), "\"\n");
    if (r.min_bytes != 0)
      out += detail::concat("min_bytes = \"", format_byte_size(r.min_bytes), "\"\n");
    if (r.max_bytes != SIZE_MAX) {
      out += detail::concat("max_bytes = \"", format_byte_size(r.max_bytes), "\"\n");
    }
    out += detail::concat("compressor = \"", r.compressor, "\"\n");
    if (r.adaptive()) {
      out += detail::concat("alternatives = [\"", joined(r.alternatives, "\", \""), "\"]\n");
    }
    out += detail::concat("threshold = \"", format_byte_size(r.threshold_bytes), "\"\n");
  }
  return out;
}

std::vector<std::string> Policy::preset_names() {
  std::vector<std::string> out;
  for (const policy::PresetText& p : policy::presets()) out.emplace_back(p.name);
  return out;
}

Policy Policy::preset(std::string_view name) {
  std::string known;
  for (const policy::PresetText& p : policy::presets()) {
    if (p.name == name) return parse_toml(p.toml, std::string(p.name) + ".toml");
    known += detail::concat(known.empty() ? "" : ", ", p.name);
  }
  throw InvalidArgument(tagged("policy", "unknown preset '", name, "'; presets: ", known));
}

Policy Policy::load(std::string_view preset_or_path) {
  for (const policy::PresetText& p : policy::presets()) {
    if (p.name == preset_or_path) return preset(preset_or_path);
  }
  const std::string path(preset_or_path);
  if (std::filesystem::exists(path)) return load_file(path);
  std::string known;
  for (const std::string& n : preset_names()) known += detail::concat(known.empty() ? "" : ", ", n);
  throw InvalidArgument(
      tagged("policy", "'", preset_or_path, "' is neither a preset nor a file; presets: ", known));
}

Policy Policy::from_environment(std::string_view fallback) {
  const char* env = std::getenv("HYCC_POLICY");
  if (env == nullptr || *env == '\0') return preset(fallback);
  try {
    return load(env);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(tagged("policy", "HYCC_POLICY: ", e.what()));
  }
}

}  // namespace hycc
