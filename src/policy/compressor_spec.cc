// Codec or gradient compressor spec (see compressor_spec.h).
#include "policy/compressor_spec.h"

#include "hycc/codec.h"
#include "hycc/grad.h"

namespace hycc::policy {

CompressorSpec parse_compressor(std::string_view spec) {
  // Gradient compressors are the stateful ones; everything else must be a codec.
  const bool gradient = spec.starts_with("ef+") || spec.starts_with("ef2+") ||
                        spec.starts_with("powersgd") || spec.starts_with("topk") ||
                        spec.starts_with("sign");
  if (gradient) return {GradCompressor(spec).spec(), true};
  return {CodecConfig::parse(spec).spec(), false};
}

namespace {

// The length of the "ef+" or "ef2+" prefix of a gradient spec, 0 for the others.
size_t ef_prefix(const CompressorSpec& spec) {
  if (!spec.gradient) return 0;
  if (spec.canonical.starts_with("ef+")) return 3;
  return spec.canonical.starts_with("ef2+") ? 4 : 0;
}

}  // namespace

bool error_feedback(const CompressorSpec& spec) { return ef_prefix(spec) > 0; }

bool two_stage(const CompressorSpec& spec) { return ef_prefix(spec) == 4; }

bool carries_gradients(Dimension d) {
  return d == Dimension::kDp || d == Dimension::kZeroGrad || d == Dimension::kEmbedding;
}

CodecConfig compressor_codec(const CompressorSpec& spec) {
  if (!spec.gradient) return CodecConfig::parse(spec.canonical);
  const size_t prefix = ef_prefix(spec);
  return prefix > 0 ? CodecConfig::parse(std::string_view(spec.canonical).substr(prefix))
                    : CodecConfig();
}

}  // namespace hycc::policy
