// A rule's compressor: a codec spec (hycc/codec.h) or a gradient compressor spec (hycc/grad.h).
#pragma once

#include <string>
#include <string_view>

#include "hycc/codec.h"
#include "hycc/policy.h"

namespace hycc::policy {

struct CompressorSpec {
  std::string canonical;  // the spec with every parameter spelled out
  bool gradient = false;  // a gradient compressor (ef+..., powersgd, topk, sign)
};

// Parses and canonicalizes a spec; throws InvalidArgument (from the codec or gradient parser).
CompressorSpec parse_compressor(std::string_view spec);

// A rule's codec: its own for a codec rule; for a gradient rule the codec an error-feedback
// compressor wraps ("ef+CODEC"), none for the others.
CodecConfig rule_codec(const PolicyRule& rule);

}  // namespace hycc::policy
