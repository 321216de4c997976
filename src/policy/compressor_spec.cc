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

namespace {
constexpr std::string_view kEf = "ef+";
}  // namespace

bool error_feedback(const CompressorSpec& spec) {
  return spec.gradient && spec.canonical.starts_with(kEf);
}

CodecConfig compressor_codec(const CompressorSpec& spec) {
  if (!spec.gradient) return CodecConfig::parse(spec.canonical);
  const std::string_view s = spec.canonical;
  return error_feedback(spec) ? CodecConfig::parse(s.substr(kEf.size())) : CodecConfig();
}

}  // namespace hycc::policy
