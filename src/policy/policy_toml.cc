// The policy file reader (format: docs/policy.md). Every error names the file, the line and the
// key or value at fault.
#include <toml++/toml.h>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/byte_size.h"
#include "hycc/error.h"
#include "hycc/policy.h"
#include "policy/compressor_spec.h"

namespace hycc {
namespace {

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const toml::source_region& where, const std::string& what) const {
    throw InvalidArgument(tagged("policy", source_, ":", where.begin.line, ": ", what));
  }

  std::string string(const toml::node& v, std::string_view key) const {
    if (!v.is_string()) fail(v.source(), detail::concat("'", key, "' must be a string"));
    return std::string(*v.value<std::string_view>());
  }

  size_t bytes(const toml::node& v, std::string_view key) const {
    if (v.is_integer()) {
      const int64_t n = *v.value<int64_t>();
      if (n < 0) fail(v.source(), detail::concat("'", key, "' must not be negative"));
      return static_cast<size_t>(n);
    }
    if (!v.is_string()) {
      fail(v.source(), detail::concat("'", key, "' must be a byte count (65536 or \"64K\")"));
    }
    const std::string_view text = *v.value<std::string_view>();
    try {
      return parse_byte_size(text, key);
    } catch (const InvalidArgument&) {
      fail(v.source(), detail::concat("bad byte count '", text, "' for ", key,
                                      ": expected N, NK, NM or NG (at most 2^40 bytes)"));
    }
  }

  Dimension dimension(const toml::node& v, bool& any) const {
    const std::string s = string(v, "dimension");
    any = s == "default";
    if (any) return Dimension::kOther;
    for (int d = 0; d < static_cast<int>(Dimension::kOther); ++d) {
      if (s == dimension_name(static_cast<Dimension>(d))) return static_cast<Dimension>(d);
    }
    fail(v.source(), detail::concat("unknown dimension '", s,
                                    "'; expected dp, tp, pp, zero_param, zero_grad, embedding "
                                    "or default"));
  }

  // The engine chooses among a rule's candidates with a cost model built from codec speeds, so
  // every candidate must be a codec, none, ef+CODEC or ef2+CODEC, and each must be listed once.
  void check_candidates(const toml::table& t, size_t index, const PolicyRule& r,
                        bool modelled) const {
    if (!r.adaptive()) return;
    const bool compressor_modelled =
        policy::error_feedback({r.compressor, r.gradient}) || !r.gradient;
    if (!modelled || !compressor_modelled) {
      fail(t.source(),
           detail::concat("rule ", index + 1,
                          ": a rule with alternatives chooses among codecs, none, ef+CODEC "
                          "and ef2+CODEC only (powersgd, topk and sign have no cost model)"));
    }
    std::vector<std::string> seen{r.compressor};
    for (const std::string& a : r.alternatives) {
      if (std::find(seen.begin(), seen.end(), a) != seen.end()) {
        fail(t.source(), detail::concat("rule ", index + 1, ": '", a, "' is listed twice"));
      }
      seen.push_back(a);
    }
  }

  std::optional<Operation> operation(const toml::node& v) const {
    const std::string s = string(v, "operation");
    if (s == "any") return std::nullopt;
    for (int o = 0; o <= static_cast<int>(Operation::kSendRecv); ++o) {
      if (s == operation_name(static_cast<Operation>(o))) return static_cast<Operation>(o);
    }
    fail(v.source(), detail::concat("unknown operation '", s,
                                    "'; expected allreduce, reduce_scatter, allgather, broadcast, "
                                    "alltoall, sendrecv or any"));
  }

  std::optional<DType> element_type(const toml::node& v) const {
    const std::string s = string(v, "dtype");
    if (s == "any") return std::nullopt;
    if (s == "f32" || s == "bf16" || s == "f16") return parse_dtype(s);
    fail(v.source(), detail::concat("unknown dtype '", s, "'; expected f32, bf16, f16 or any"));
  }

  policy::CompressorSpec compressor(const toml::node& v, std::string_view key) const {
    const std::string spec = string(v, key);
    try {
      return policy::parse_compressor(spec);
    } catch (const InvalidArgument& e) {
      fail(v.source(), detail::concat(key, " '", spec, "': ", e.what()));
    }
  }

  // `alternatives`: codec, ef+CODEC or ef2+CODEC specs, whose cost follows from their codec.
  std::vector<policy::CompressorSpec> alternatives(const toml::node& v) const {
    const toml::array* a = v.as_array();
    if (a == nullptr) fail(v.source(), "'alternatives' must be an array of compressor specs");
    std::vector<policy::CompressorSpec> out;
    for (const toml::node& item : *a) out.push_back(compressor(item, "alternative"));
    return out;
  }

  PolicyRule rule(const toml::table& t, size_t index, size_t default_threshold) const {
    PolicyRule r;
    r.threshold_bytes = default_threshold;
    r.origin = detail::concat(source_, ":", t.source().begin.line);
    bool has_dimension = false, has_compressor = false;
    bool any_gradient = false;  // the compressor or an alternative is a gradient compressor
    bool modelled = true;       // every alternative is a codec, ef+CODEC or ef2+CODEC
    for (auto&& [key, value] : t) {
      const std::string_view k = key.str();
      if (k == "dimension") {
        bool any = false;
        const Dimension d = dimension(value, any);
        if (!any) r.dimension = d;
        has_dimension = true;
      } else if (k == "operation") {
        r.operation = operation(value);
      } else if (k == "dtype") {
        r.dtype = element_type(value);
      } else if (k == "min_bytes") {
        r.min_bytes = bytes(value, k);
      } else if (k == "max_bytes") {
        r.max_bytes = bytes(value, k);
      } else if (k == "threshold") {
        r.threshold_bytes = bytes(value, k);
      } else if (k == "compressor") {
        const policy::CompressorSpec c = compressor(value, k);
        r.compressor = c.canonical;
        r.gradient = c.gradient;
        has_compressor = true;
      } else if (k == "alternatives") {
        for (const policy::CompressorSpec& c : alternatives(value)) {
          r.alternatives.push_back(c.canonical);
          any_gradient = any_gradient || c.gradient;
          modelled = modelled && (!c.gradient || policy::error_feedback(c));
        }
      } else {
        fail(key.source(), detail::concat("unknown key '", k, "' in rule ", index + 1,
                                          "; expected dimension, operation, dtype, "
                                          "min_bytes, max_bytes, compressor, alternatives, "
                                          "threshold"));
      }
    }
    any_gradient = any_gradient || r.gradient;
    if (!has_dimension) fail(t.source(), detail::concat("rule ", index + 1, " has no 'dimension'"));
    if (!has_compressor) {
      fail(t.source(), detail::concat("rule ", index + 1, " has no 'compressor'"));
    }
    if (r.min_bytes >= r.max_bytes) {
      fail(t.source(), detail::concat("rule ", index + 1, ": min_bytes ", r.min_bytes,
                                      " is not below max_bytes ", r.max_bytes));
    }
    // Gradient compressors keep state per gradient tensor: they only make sense where gradients
    // are reduced.
    const bool reduces = !r.operation || *r.operation == Operation::kAllreduce ||
                         *r.operation == Operation::kReduceScatter;
    const bool gradient_dimension = !r.dimension || policy::carries_gradients(*r.dimension);
    if (any_gradient && !(reduces && gradient_dimension)) {
      fail(t.source(), detail::concat("rule ", index + 1, ": gradient compressors ('", r.compressor,
                                      "' or an alternative) need dimension dp, zero_grad, "
                                      "embedding or default and operation allreduce, "
                                      "reduce_scatter or any"));
    }
    check_candidates(t, index, r, modelled);
    return r;
  }

 private:
  std::string source_;
};

}  // namespace

Policy Policy::parse_toml(std::string_view text, std::string source) {
  const Reader reader(source);
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw InvalidArgument(
        tagged("policy", source, ":", e.source().begin.line, ": ", e.description()));
  }
  Policy p;
  p.name_ = source;
  size_t threshold = CollectiveOptions{}.threshold_bytes;
  if (const toml::node* t = doc.get("threshold")) threshold = reader.bytes(*t, "threshold");
  for (auto&& [key, value] : doc) {
    const std::string_view k = key.str();
    if (k == "name") {
      p.name_ = reader.string(value, k);
    } else if (k == "description") {
      p.description_ = reader.string(value, k);
    } else if (k == "threshold") {
      continue;
    } else if (k == "rule") {
      const toml::array* rules = value.as_array();
      if (rules == nullptr || !rules->is_array_of_tables()) {
        reader.fail(value.source(), "'rule' must be an array of tables ([[rule]] sections)");
      }
      for (size_t i = 0; i < rules->size(); ++i) {
        p.rules_.push_back(reader.rule(*rules->get(i)->as_table(), i, threshold));
        const PolicyRule& r = p.rules_.back();
        std::vector<Candidate>& c = p.candidates_.emplace_back();
        c.push_back(
            {r.compressor, r.gradient, policy::compressor_codec({r.compressor, r.gradient})});
        for (const std::string& a : r.alternatives) {
          const policy::CompressorSpec spec = policy::parse_compressor(a);
          c.push_back({spec.canonical, spec.gradient, policy::compressor_codec(spec)});
        }
      }
    } else {
      reader.fail(key.source(), detail::concat("unknown key '", k,
                                               "'; expected name, description, threshold, rule"));
    }
  }
  return p;
}

Policy Policy::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(tagged("policy", "cannot read policy file '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_toml(text.str(), path);
}

}  // namespace hycc
