// hycc-policy: what a policy will do, before a job runs it.
//   hycc-policy check POLICY            parse it (errors as the library reports them) and warn
//                                       about rules whose codec's error on N(0, 1) data exceeds
//                                       the bound without error feedback, and unreachable rules
//   hycc-policy explain POLICY --dim D --op OP --bytes N [--dtype bf16]
//                                       which rule a call matches, and why the others do not
//   hycc-policy list                    the presets
// POLICY is a preset name or a TOML file (docs/policy.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "codec/float_io.h"
#include "common/byte_size.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "hycc/policy.h"
#include "policy/compressor_spec.h"

namespace hycc {
namespace {

// Relative L2 error above which a lossy codec, without error feedback, sends noise more than
// signal-like data: quant:bits=4 is 0.09 on N(0, 1), quant:bits=3 0.19, zfp:rate=4 0.97.
constexpr double kDefaultBound = 0.1;
constexpr size_t kSampleValues = size_t{1} << 20;

struct Measured {
  double ratio = 1.0;
  double relative_error = 0.0;
};

// The codec on 2^20 N(0, 1) values of `dtype`: compression ratio and ||x - x'|| / ||x||.
Measured measure(const CodecConfig& codec, DType dtype) {
  static const std::vector<float> gaussian = make_data(DataKind::kGaussian, kSampleValues, 7);
  std::vector<uint32_t> storage(kSampleValues);  // room for float32 or 16-bit elements
  const TensorView in{dtype, kSampleValues, storage.data()};
  codec::store_from_float(gaussian.data(), kSampleValues, in, 0);
  std::vector<float> x(kSampleValues), y(kSampleValues);
  codec::load_as_float(in, 0, kSampleValues, x.data());
  const std::vector<std::byte> stream = compress(codec, in);
  std::vector<uint32_t> decoded(kSampleValues);
  const TensorView out{dtype, kSampleValues, decoded.data()};
  decompress(stream, out);
  codec::load_as_float(out, 0, kSampleValues, y.data());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    norm += static_cast<double>(x[i]) * x[i];
  }
  return {static_cast<double>(in.bytes()) / static_cast<double>(stream.size()),
          std::sqrt(diff / norm)};
}

std::string rule_scope(const PolicyRule& r) {
  std::string s = r.dimension ? dimension_name(*r.dimension) : "default";
  if (r.operation) s += std::string(" ") + operation_name(*r.operation);
  if (r.dtype) s += std::string(" ") + std::string(dtype_name(*r.dtype));
  if (r.min_bytes != 0 || r.max_bytes != SIZE_MAX) {
    s += " [" + format_byte_size(r.min_bytes) + ", " +
         (r.max_bytes == SIZE_MAX ? std::string("inf") : format_byte_size(r.max_bytes)) + ")";
  }
  return s;
}

// True if every call rule `later` matches is matched by rule `earlier` first.
bool covers(const PolicyRule& earlier, const PolicyRule& later) {
  const bool dimension = !earlier.dimension || earlier.dimension == later.dimension;
  const bool operation = !earlier.operation || earlier.operation == later.operation;
  const bool dtype = !earlier.dtype || earlier.dtype == later.dtype;
  return dimension && operation && dtype && earlier.min_bytes <= later.min_bytes &&
         earlier.max_bytes >= later.max_bytes;
}

int check(const Policy& policy, double bound) {
  std::printf("policy '%s': %zu rules\n", policy.name().c_str(), policy.rules().size());
  int warnings = 0;
  const auto warn = [&](const std::string& what) {
    std::printf("    warning: %s\n", what.c_str());
    ++warnings;
  };
  const std::vector<PolicyRule>& rules = policy.rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    const PolicyRule& r = rules[i];
    std::printf("  rule %zu (%s) %s: %s, threshold %s\n", i + 1, r.origin.c_str(),
                rule_scope(r).c_str(), r.compressor.c_str(),
                format_byte_size(r.threshold_bytes).c_str());
    for (size_t j = 0; j < i; ++j) {
      if (covers(rules[j], r)) {
        warn("never used: rule " + std::to_string(j + 1) + " matches every call it would");
        break;
      }
    }
    std::vector<std::string> candidates = {r.compressor};
    candidates.insert(candidates.end(), r.alternatives.begin(), r.alternatives.end());
    for (const std::string& spec : candidates) {
      const policy::CompressorSpec c = policy::parse_compressor(spec);
      if (c.gradient && policy::error_feedback(c)) {
        std::printf("    %s: error feedback carries what its codec drops\n", spec.c_str());
        continue;
      }
      if (c.gradient) {
        if (c.canonical.find("ef=off") != std::string::npos) {
          warn(spec + " runs without error feedback");
        }
        continue;
      }
      const CodecConfig codec = policy::compressor_codec(c);
      if (codec.lossless()) {
        std::printf("    %s: lossless\n", spec.c_str());
        continue;
      }
      const DType dtype = r.dtype.value_or(DType::kF32);
      const Measured m = measure(codec, dtype);
      std::printf("    %s: ratio %.2f, relative error %.3g on N(0, 1) %s\n", spec.c_str(), m.ratio,
                  m.relative_error, std::string(dtype_name(dtype)).c_str());
      if (m.relative_error > bound) {
        char text[160];
        std::snprintf(text, sizeof(text),
                      "%s loses more than %.3g of the signal (%.3g) and has no error feedback",
                      spec.c_str(), bound, m.relative_error);
        warn(text);
      }
    }
  }
  std::printf("%d warning%s\n", warnings, warnings == 1 ? "" : "s");
  return warnings;
}

template <typename Enum>
Enum parse_name(const std::string& text, int count, const char* (*name)(Enum), const char* what) {
  std::string known;
  for (int v = 0; v < count; ++v) {
    const auto e = static_cast<Enum>(v);
    if (text == name(e)) return e;
    known += std::string(known.empty() ? "" : ", ") + name(e);
  }
  throw InvalidArgument(tagged("policy", "unknown ", what, " '", text, "' (", known, ")"));
}

int run(int argc, char** argv) {
  CLI::App app{"hycc-policy: what a compression policy will do, before a job runs it"};
  app.require_subcommand(1);
  std::string policy_name;
  double bound = kDefaultBound;
  bool strict = false;
  CLI::App* check_cmd = app.add_subcommand(
      "check",
      "parse a policy and warn about lossy rules without error feedback whose error "
      "on N(0, 1) data exceeds the bound, and about rules that never match");
  check_cmd->add_option("policy", policy_name, "preset name or TOML file")->required();
  check_cmd->add_option("--bound", bound, "relative L2 error allowed without error feedback")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  check_cmd->add_flag("--strict", strict, "exit 1 when there are warnings");

  std::string dim = "dp", op = "allreduce", bytes = "4M", dtype = "f32";
  CLI::App* explain_cmd =
      app.add_subcommand("explain", "which rule a call matches, and why the others do not");
  explain_cmd->add_option("policy", policy_name, "preset name or TOML file")->required();
  explain_cmd->add_option("--dim", dim, "dp, tp, pp, zero_param, zero_grad, embedding, other")
      ->capture_default_str();
  explain_cmd
      ->add_option("--op", op,
                   "allreduce, reduce_scatter, allgather, broadcast, "
                   "alltoall, sendrecv")
      ->capture_default_str();
  explain_cmd->add_option("--bytes", bytes, "uncompressed message size: N, NK, NM, NG")
      ->capture_default_str();
  explain_cmd->add_option("--dtype", dtype, "element type: f32, bf16, f16")->capture_default_str();
  app.add_subcommand("list", "the preset policies");
  CLI11_PARSE(app, argc, argv);

  if (app.got_subcommand("list")) {
    for (const std::string& name : Policy::preset_names()) {
      std::printf("%-10s %s\n", name.c_str(), Policy::preset(name).description().c_str());
    }
    return 0;
  }
  const Policy policy = Policy::load(policy_name);
  if (app.got_subcommand(check_cmd)) {
    const int warnings = check(policy, bound);
    return strict && warnings > 0 ? 1 : 0;
  }
  const auto d = parse_name<Dimension>(dim, static_cast<int>(Dimension::kOther) + 1, dimension_name,
                                       "dimension");
  const auto o = parse_name<Operation>(op, static_cast<int>(Operation::kSendRecv) + 1,
                                       operation_name, "operation");
  const size_t n = parse_byte_size(bytes, "--bytes");
  std::printf("%s", policy.explain(d, o, n, parse_dtype(dtype)).c_str());
  return 0;
}

}  // namespace
}  // namespace hycc

int main(int argc, char** argv) {
  try {
    return hycc::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hycc-policy: %s\n", e.what());
    return 2;
  }
}
