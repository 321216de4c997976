// Slow, obvious implementation of the "exphuff" payload (layout in codec_exphuff.cc): the oracle
// of the fast path's tests. Element by element through the field functions, one bit at a time
// in and out, and codes decoded by walking the canonical code instead of a table.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "hycc/dtype.h"

namespace hycc::codec::reference {

std::vector<std::byte> exphuff_encode(ConstTensorView in, size_t block);

// Throws CorruptStream if the payload is malformed.
void exphuff_decode(std::span<const std::byte> payload, TensorView out, size_t block);

}  // namespace hycc::codec::reference
