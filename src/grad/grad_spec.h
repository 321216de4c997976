// Gradient compressor specs: "none", "ef+CODEC", "ef2+CODEC", "powersgd:...", "topk:...",
// "sign:...", parsed with the codec spec parser (codec/spec_args.h) into a GradSpec with every
// parameter resolved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hycc/codec.h"

namespace hycc::grad {

// kErrorFeedback: ef+CODEC (compress once, gather every stream); kTwoStageErrorFeedback:
// ef2+CODEC (worker and server residuals, each rank sends 2 (p - 1) / p of the stream).
enum class Kind : uint8_t {
  kNone,
  kErrorFeedback,
  kPowerSgd,
  kTopK,
  kSign,
  kTwoStageErrorFeedback
};

// ef+CODEC and ef2+CODEC: error feedback around a codec, a residual from the first step on.
inline bool wraps_codec(Kind k) {
  return k == Kind::kErrorFeedback || k == Kind::kTwoStageErrorFeedback;
}
// The kinds whose reduce-scatter sends each chunk to its owner only (StepArgs::shard_only: the
// first of two stages, or none's plain reduce-scatter); the others run their allreduce and keep
// the chunk.
inline bool scatters_to_owners(Kind k) {
  return wraps_codec(k) || k == Kind::kSign || k == Kind::kNone;
}

struct GradSpec {
  Kind kind = Kind::kNone;
  std::string canonical;  // every parameter spelled out
  bool error_feedback = false;
  CodecConfig codec;           // ef+CODEC, ef2+CODEC: the codec
  int rank = 4;                // powersgd: rank of the approximation
  double min_compression = 2;  // powersgd: uncompressed unless n m >= this x r (n + m)
  bool warm_start = true;      // powersgd: keep Q from the previous step
  uint32_t seed = 0;           // powersgd: seed of the initial Q
  uint64_t start = 0;          // powersgd: steps of each key sent uncompressed first
  bool flat_square = true;     // powersgd: a tensor without shape or pieces as a square matrix
  double ratio = 0;            // topk: fraction of the elements (0 when count is given)
  size_t count = 0;            // topk: number of elements (0 when ratio is given)
};

// Throws InvalidArgument ("[grad] ...") naming the spec and what is accepted.
GradSpec parse_grad_spec(std::string_view spec);

// One line per compressor with its parameters, ranges and defaults.
std::string grad_spec_help();

// Top-k: the number of elements kept of a tensor of n elements (1 <= k <= n for n > 0).
size_t topk_count(const GradSpec& spec, size_t n);

}  // namespace hycc::grad
