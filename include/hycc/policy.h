// The hybrid compression policy: one place that decides, per parallel dimension, operation and
// message size, what gets compressed and how.
//
// A policy is an ordered list of rules. Each rule names a dimension (dp, tp, pp, zero_param,
// zero_grad, embedding, or default = any), optionally an operation, an element type (f32, bf16,
// f16: mixed-precision traffic takes other codecs than float32) and a message size range, and
// says which compressor to use (a codec spec such as "quant:bits=8", or a gradient compressor
// spec such as "ef+quant:bits=4" or "powersgd:rank=4", see hycc/grad.h) with which threshold.
// The first matching rule wins; a call that no rule matches goes uncompressed.
//
// A rule may also list alternatives to its compressor ("none" among them): a PolicyEngine then
// picks, per call, the candidate that a cost model of the measured link and codec speeds says is
// fastest (docs/policy.md, "Adaptive rules"); Policy::decide alone, without measurements, always
// gives the rule's compressor.
//
// Policies come from presets (baseline, naive, hybrid-mz, hybrid-z, hybrid; the TOML files under
// configs/policies/ are the same text), from TOML files, or from the environment:
// HYCC_POLICY=PRESET|FILE. docs/policy.md describes the file format and the presets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/comm.h"

namespace hycc {

// The traffic a collective carries.
enum class Dimension : uint8_t {
  kDp = 0,         // data-parallel gradients
  kTp = 1,         // tensor-parallel activations and their gradients
  kPp = 2,         // pipeline-parallel activations crossing stages
  kZeroParam = 3,  // ZeRO: parameters gathered from their shards
  kZeroGrad = 4,   // ZeRO: gradients reduce-scattered to their shards
  kEmbedding = 5,  // tied embedding gradients between the first and last stage
  kOther = 6,      // anything else (a rule for it must use dimension "default")
};
const char* dimension_name(Dimension d);

// The dimension of a call on `comm`, from the communicator's name ("dp", "tp", "pp",
// "embedding"; "zero" is zero_grad for reductions and zero_param otherwise); kOther for any other
// name.
Dimension dimension_of(const Communicator& comm, Operation op);
// The same from a communicator name.
Dimension dimension_of(std::string_view comm_name, Operation op);

struct PolicyRule {
  std::optional<Dimension> dimension;  // nullopt: "default", any dimension
  std::optional<Operation> operation;  // nullopt: any operation
  std::optional<DType> dtype;          // nullopt: any element type
  size_t min_bytes = 0;                // uncompressed message size, inclusive
  size_t max_bytes = SIZE_MAX;         // exclusive
  std::string compressor = "none";     // canonical codec or gradient compressor spec
  bool gradient = false;               // true: a gradient compressor spec (hycc/grad.h)
  // Canonical specs the engine may choose instead of `compressor` from measurements (codecs,
  // "none" or ef+CODEC); empty: the rule always uses `compressor`.
  std::vector<std::string> alternatives;
  size_t threshold_bytes = 64 << 10;  // below it, the native MPI call (CollectiveOptions)
  std::string origin;                 // where it was defined: "hybrid.toml:12", "preset naive"

  bool matches(Dimension d, Operation op, size_t bytes, DType element_type = DType::kF32) const;
  bool adaptive() const { return !alternatives.empty(); }
};

// What the policy decided for one call.
struct PolicyDecision {
  int rule = -1;           // index of the matching rule; -1: none matched
  int candidate = 0;       // 0: the rule's compressor; k >= 1: its alternative k - 1
  std::string compressor;  // "none" when nothing matched
  bool gradient = false;   // a gradient compressor: call grad_allreduce/grad_reduce_scatter
  size_t threshold_bytes = 64 << 10;
  // Collective options for a codec decision (codec, threshold; other fields default). For a
  // gradient decision, the codec is none: callers run the gradient compressor instead.
  CollectiveOptions options;
  // For a gradient decision, the codec an error-feedback compressor wraps ("ef+quant:bits=4" ->
  // quant:bits=4; none for powersgd, topk and sign), for operations the compressor cannot run.
  CodecConfig gradient_codec;
  // An adaptive rule's choice explained (the modelled time of every candidate), filled by
  // PolicyEngine::choose when HYCC_LOG asks for decisions; empty otherwise.
  std::string choice;
};

class Policy {
 public:
  // A policy with no rules: nothing is compressed.
  Policy();

  // The built-in presets; throws InvalidArgument listing them for an unknown name.
  static Policy preset(std::string_view name);
  static std::vector<std::string> preset_names();
  // A TOML document; `source` names it in errors and origins ("hybrid.toml"). Throws
  // InvalidArgument with "source:line:" and the offending key or value.
  static Policy parse_toml(std::string_view text, std::string source);
  static Policy load_file(const std::string& path);
  // HYCC_POLICY: a preset name or a file path; unset or empty gives `fallback` (a preset).
  static Policy from_environment(std::string_view fallback = "baseline");
  // A preset name or a TOML file path.
  static Policy load(std::string_view preset_or_path);

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::vector<PolicyRule>& rules() const { return rules_; }

  // The decision for a call of `bytes` uncompressed bytes of `dtype` elements.
  PolicyDecision decide(Dimension d, Operation op, size_t bytes, DType dtype = DType::kF32) const;
  // Rule `rule`'s candidates: its compressor (0), then its alternatives; the decision for one.
  size_t candidate_count(size_t rule) const { return candidates_.at(rule).size(); }
  PolicyDecision decision_for(size_t rule, size_t candidate) const;
  // True when some rule has alternatives (a PolicyEngine measures links and codecs for it).
  bool adaptive() const;
  // Which rule matched a call and why (and why the rules before it did not), in a few lines.
  std::string explain(Dimension d, Operation op, size_t bytes, DType dtype = DType::kF32) const;
  // The policy as TOML that parse_toml reads back into the same rules.
  std::string to_toml() const;

 private:
  std::string name_ = "empty";
  std::string description_;
  std::vector<PolicyRule> rules_;
  // Per rule, parsed once: its compressor and alternatives, each with its codec (for a gradient
  // compressor, the codec it wraps).
  struct Candidate {
    std::string compressor;
    bool gradient = false;
    CodecConfig codec;
  };
  std::vector<std::vector<Candidate>> candidates_;
};

}  // namespace hycc
