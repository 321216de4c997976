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

// A compressor's codec: its own for a codec; for a gradient compressor the codec an
// error-feedback compressor wraps ("ef+CODEC", "ef2+CODEC"), none for the others.
CodecConfig compressor_codec(const CompressorSpec& spec);

// True for "ef+CODEC" and "ef2+CODEC": gradient compressors whose cost follows from the codec's.
bool error_feedback(const CompressorSpec& spec);
// True for "ef2+CODEC" (two stages: an alltoall and an allgather of compressed chunks).
bool two_stage(const CompressorSpec& spec);

// The dimensions whose traffic is gradients (dp, zero_grad, embedding): where gradient
// compressors may run, and what adaptive rules measure codecs on (noise-like data).
bool carries_gradients(Dimension d);

}  // namespace hycc::policy
