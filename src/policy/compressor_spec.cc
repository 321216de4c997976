// Codec or gradient compressor spec (see compressor_spec.h).
#include "policy/compressor_spec.h"

#include "hycc/codec.h"
#include "hycc/grad.h"

namespace hycc::policy {

CompressorSpec parse_compressor(std::string_view spec) {
  // Gradient compressors are the stateful ones; everything else must be a codec.
  const bool gradient = spec.starts_with("ef+") || spec.starts_with("powersgd") ||
                        spec.starts_with("topk") || spec.starts_with("sign");
  if (gradient) return {GradCompressor(spec).spec(), true};
  return {CodecConfig::parse(spec).spec(), false};
}

CodecConfig rule_codec(const PolicyRule& rule) {
  if (!rule.gradient) return CodecConfig::parse(rule.compressor);
  constexpr std::string_view kEf = "ef+";
  const std::string_view spec = rule.compressor;
  return spec.starts_with(kEf) ? CodecConfig::parse(spec.substr(kEf.size())) : CodecConfig();
}

}  // namespace hycc::policy
