// The sign compressor's chunk encoding on the host (format and summation order: sign_block.h).
#pragma once

#include <cstdint>
#include <span>

namespace hycc::grad {

// Encodes x into out (sign::chunk_words(x.size()) words or more; the words past the bits are 0).
void encode_sign(std::span<const float> x, std::span<uint32_t> out);
// out[i] = +scale or -scale, as encoded in `in`.
void decode_sign(std::span<const uint32_t> in, std::span<float> out);

// sum |x| in sign_block.h's order (fast: each tile's lanes as one vectorizable pass per row of
// kLanes values), and the reference: the same order, lane by lane (sign::lane_sum, tile_sum).
double sign_abs_sum(std::span<const float> x);
double sign_abs_sum_reference(std::span<const float> x);

}  // namespace hycc::grad
