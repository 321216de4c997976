#include "grad/grad_spec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>

#include "codec/registry.h"
#include "codec/spec_args.h"
#include "hycc/error.h"

namespace hycc::grad {
namespace {

constexpr std::string_view kEfPrefix = "ef+";
constexpr std::string_view kEf2Prefix = "ef2+";

constexpr std::string_view kPowerSgdHelp =
    "rank=1..256 (default 4), min_compression=1..1e6 (default 2), warm_start=on|off (default "
    "on), ef=on|off (default on), seed=0..2147483647 (default 0), start=0..2147483647 (default 0: "
    "steps of each tensor sent uncompressed first), flat=square|plain (default square: a tensor "
    "given without shape or pieces is viewed as a near-square matrix; plain: sent uncompressed)";
constexpr std::string_view kTopKHelp =
    "ratio=(0, 1] or count=1..2^40 (default ratio=0.01), ef=on|off (default on)";
constexpr std::string_view kSignHelp = "ef=on|off (default on)";

// Re-tags the parser's "[codec] ..." messages as "[grad] ...".
[[noreturn]] void rethrow_as_grad(const InvalidArgument& e) {
  std::string_view what = e.what();
  if (what.substr(0, 7) == "[grad] ") throw e;
  constexpr std::string_view codec_tag = "[codec] ";
  if (what.substr(0, codec_tag.size()) == codec_tag) what.remove_prefix(codec_tag.size());
  throw InvalidArgument(tagged("grad", what));
}

// Shortest text that parses back to the same double.
std::string shortest(double v) {
  std::array<char, 32> buf{};
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), result.ptr);
}

bool get_switch(codec::SpecArgs& args, std::string_view key, bool fallback) {
  const std::string v = args.get_choice(key, fallback ? "on" : "off", {"on", "off", "1", "0"});
  return v == "on" || v == "1";
}
const char* on_off(bool b) { return b ? "on" : "off"; }

GradSpec parse_powersgd(codec::SpecArgs& args) {
  GradSpec s;
  s.kind = Kind::kPowerSgd;
  s.rank = args.get_int("rank", 4, 1, 256);
  s.min_compression = args.get_double("min_compression", 2, 1, 1e6);
  s.warm_start = get_switch(args, "warm_start", true);
  s.error_feedback = get_switch(args, "ef", true);
  s.seed = static_cast<uint32_t>(args.get_int("seed", 0, 0, 2147483647));
  s.start = static_cast<uint64_t>(args.get_int("start", 0, 0, 2147483647));
  s.flat_square = args.get_choice("flat", "square", {"square", "plain"}) == "square";
  args.finish(kPowerSgdHelp);
  s.canonical = detail::concat(
      "powersgd:rank=", s.rank, ",min_compression=", shortest(s.min_compression),
      ",warm_start=", on_off(s.warm_start), ",ef=", on_off(s.error_feedback), ",seed=", s.seed,
      ",start=", s.start, ",flat=", s.flat_square ? "square" : "plain");
  return s;
}

GradSpec parse_topk(codec::SpecArgs& args) {
  GradSpec s;
  s.kind = Kind::kTopK;
  if (args.has("ratio") && args.has("count")) {
    throw InvalidArgument(tagged("grad", "spec '", args.spec(),
                                 "' gives both ratio and count; topk takes one of them"));
  }
  const std::optional<double> count = args.get_optional_double("count", 1, 1099511627776.0);
  if (count) {
    if (*count != std::floor(*count)) {
      throw InvalidArgument(tagged("grad", "bad value for 'count' in spec '", args.spec(),
                                   "': expected an integer in [1, 2^40]"));
    }
    s.count = static_cast<size_t>(*count);
  } else {
    s.ratio = args.get_double("ratio", 0.01, 0, 1);
    if (s.ratio <= 0) {
      throw InvalidArgument(tagged("grad", "bad value for 'ratio' in spec '", args.spec(),
                                   "': expected a number in (0, 1]"));
    }
  }
  s.error_feedback = get_switch(args, "ef", true);
  args.finish(kTopKHelp);
  s.canonical = s.count > 0 ? detail::concat("topk:count=", s.count)
                            : detail::concat("topk:ratio=", shortest(s.ratio));
  s.canonical += detail::concat(",ef=", on_off(s.error_feedback));
  return s;
}

GradSpec parse_sign(codec::SpecArgs& args) {
  GradSpec s;
  s.kind = Kind::kSign;
  s.error_feedback = get_switch(args, "ef", true);
  args.finish(kSignHelp);
  s.canonical = detail::concat("sign:ef=", on_off(s.error_feedback));
  return s;
}

std::string known_names() {
  std::string codecs;
  for (const std::string& n : codec_names()) codecs += (codecs.empty() ? "" : "|") + n;
  return "none, ef+CODEC, ef2+CODEC (CODEC: " + codecs + "), powersgd, topk, sign";
}

}  // namespace

GradSpec parse_grad_spec(std::string_view spec) {
  for (const auto& [prefix, kind] : {std::pair{kEfPrefix, Kind::kErrorFeedback},
                                     std::pair{kEf2Prefix, Kind::kTwoStageErrorFeedback}}) {
    if (spec.substr(0, prefix.size()) != prefix) continue;
    GradSpec s;
    s.kind = kind;
    s.error_feedback = true;
    try {
      s.codec = CodecConfig::parse(spec.substr(prefix.size()));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(tagged("grad", "in spec '", spec, "': ", e.what()));
    }
    s.canonical = std::string(prefix) + s.codec.spec();
    return s;
  }
  try {
    codec::SpecArgs args = codec::SpecArgs::parse(spec);
    if (args.name() == "none") {
      args.finish("nothing (none takes no parameters)");
      GradSpec s;
      s.canonical = "none";
      return s;
    }
    if (args.name() == "powersgd") return parse_powersgd(args);
    if (args.name() == "topk") return parse_topk(args);
    if (args.name() == "sign") return parse_sign(args);
    std::string hint;
    if (codec::find_codec(args.name()) != nullptr) {
      hint = detail::concat("; for error feedback around the codec write 'ef+", spec, "'");
    }
    throw InvalidArgument(tagged("grad", "unknown gradient compressor '", args.name(),
                                 "' in spec '", spec, "'; known: ", known_names(), hint));
  } catch (const InvalidArgument& e) {
    rethrow_as_grad(e);
  }
}

std::string grad_spec_help() {
  return detail::concat(
      "  none\n  ef+CODEC (any codec spec, e.g. ef+quant:bits=4, ef+zfp:rate=4)\n",
      "  ef2+CODEC (the same in two stages, worker and server residuals: scales to many ranks)\n",
      "  powersgd:", kPowerSgdHelp, "\n  topk:", kTopKHelp, "\n  sign:", kSignHelp, "\n");
}

size_t topk_count(const GradSpec& spec, size_t n) {
  if (n == 0) return 0;
  const double want = spec.count > 0 ? static_cast<double>(spec.count)
                                     : std::ceil(spec.ratio * static_cast<double>(n));
  return static_cast<size_t>(std::clamp(want, 1.0, static_cast<double>(n)));
}

}  // namespace hycc::grad
