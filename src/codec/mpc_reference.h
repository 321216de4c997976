// Slow, obvious implementation of the "mpc" payload (layout documented in codec_mpc.cc): the
// oracle of the fast path's tests. One step at a time, on whole arrays, with a bit-by-bit
// transpose.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "hycc/dtype.h"

namespace hycc::codec::reference {

// The payload of `in` with delta stride `dim` (1..64).
std::vector<std::byte> mpc_encode(ConstTensorView in, int dim);

// Decodes a payload into `out` (whose dtype and count say what was encoded); throws
// CorruptStream if the payload is malformed.
void mpc_decode(std::span<const std::byte> payload, TensorView out, int dim);

}  // namespace hycc::codec::reference
