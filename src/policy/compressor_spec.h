// A rule's compressor: a codec spec (hycc/codec.h) or a gradient compressor spec (hycc/grad.h).
#pragma once

#include <string>
#include <string_view>

namespace hycc::policy {

struct CompressorSpec {
  std::string canonical;  // the spec with every parameter spelled out
  bool gradient = false;  // a gradient compressor (ef+..., powersgd, topk, sign)
};

// Parses and canonicalizes a spec; throws InvalidArgument (from the codec or gradient parser).
CompressorSpec parse_compressor(std::string_view spec);

}  // namespace hycc::policy
