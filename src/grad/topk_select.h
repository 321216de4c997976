// Top-k selection and the compact index format of the top-k compressor.
//
// Selection order: larger |x| first, ties to the lower index; |x| is compared through the bit
// pattern with the sign cleared, a total order in which NaN ranks above infinity. The result is
// the set of the k first elements in that order, returned in ascending index order.
//
// Indices are bit-packed at a fixed width of index_bits(n) = max(1, bit_width(n - 1)) bits,
// least significant bit first, into 32-bit words: k indices take packed_words(k, n) words, the
// same on every rank, so the payloads can be allgathered at a fixed size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hycc::grad {

// Fast: an nth_element over the magnitude keys to find the k-th largest, then one pass.
std::vector<uint64_t> select_topk(std::span<const float> x, size_t k);
// Reference: a full sort of (key, index) pairs.
std::vector<uint64_t> select_topk_reference(std::span<const float> x, size_t k);

int index_bits(size_t n);
size_t packed_words(size_t k, int bits);

// Fast: a 64-bit accumulator. Every index must be < 2^bits; out has packed_words(k, bits) words.
void pack_indices(std::span<const uint64_t> idx, int bits, std::span<uint32_t> out);
void unpack_indices(std::span<const uint32_t> in, int bits, std::span<uint64_t> idx);
// Reference: one bit at a time.
void pack_indices_reference(std::span<const uint64_t> idx, int bits, std::span<uint32_t> out);
void unpack_indices_reference(std::span<const uint32_t> in, int bits, std::span<uint64_t> idx);

}  // namespace hycc::grad
