// Decoding a stream that came from another rank, whose shape the receiver knows.
#pragma once

#include <cstddef>
#include <span>

#include "hycc/codec.h"

namespace hycc::codec {

// Decodes `stream` into `out`. Throws CorruptStream if it is malformed or does not hold exactly
// out's dtype and count (a peer never sends a well-formed stream of another shape).
void decode_peer_stream(std::span<const std::byte> stream, TensorView out);

}  // namespace hycc::codec
