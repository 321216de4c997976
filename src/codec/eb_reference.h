// The "eb" (error-bounded) codec: host-side definitions beside codec/block/eb_block.h (which
// holds the quantizer, the bound check and the per-block logic shared with the CUDA kernels),
// and the slow, obvious reference encoder and decoder, the oracle of the fast path's tests.
// The payload layout is documented at the top of codec_eb.cc.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "codec/block/eb_block.h"
#include "hycc/dtype.h"

namespace hycc::codec::eb {

// The absolute bound of rel=`rel` for finite values spanning [lo, hi], never negative; saturates
// at the largest double instead of overflowing.
inline double relative_bound(double rel, float lo, float hi) {
  const double bound = rel * (static_cast<double>(hi) - static_cast<double>(lo));
  if (!(bound > 0)) return 0.0;  // also turns -0 (from hi = -0, lo = +0) into +0
  return std::isfinite(bound) ? bound : std::numeric_limits<double>::max();
}

// The first finite element as float, or 0 if there is none (only needed when the bound is 0).
float first_finite(ConstTensorView in);

// Checks the payload preamble (resolved bound, step); returns what is wrong, or nullptr.
inline const char* preamble_error(double bound, double step) {
  if (!(bound >= 0) || !std::isfinite(bound)) return "invalid bound in the preamble";
  if (!(step > 0) || !std::isfinite(step)) return "invalid step in the preamble";
  if (bound > 0 && step != make_quantizer(bound, 0.0f).step) return "step does not match the bound";
  return nullptr;
}

}  // namespace hycc::codec::eb

namespace hycc::codec::reference {

// The bound a spec resolves to for `in`: `value` itself for abs; for rel, relative_bound() over
// the smallest and largest finite elements (0 when there are none).
double eb_resolve_bound(ConstTensorView in, bool relative, double value);

// The whole payload for `in` under the resolved absolute bound, written element by element and
// bit by bit. The fast encoder must produce these bytes exactly.
std::vector<std::byte> eb_encode(ConstTensorView in, double bound);

// Decodes a payload into `out`, checking every field; throws CorruptStream if malformed.
void eb_decode(std::span<const std::byte> payload, TensorView out);

}  // namespace hycc::codec::reference
