// The Huffman codes of the "exphuff" codec: length-limited code lengths from a histogram,
// canonical codes from lengths, the code-length table as stored, and the decoding table.
// Shared by the fast coder and the reference (which decodes without the decoding table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/block/exp_huffman.h"

namespace hycc::codec::exphuff {

// Code lengths (0 for symbols that do not occur, else 1..kMaxCodeBits) of a Huffman code for
// `histogram`, in which at least two symbols occur. Deterministic: ties go to the lower symbol.
// Where the optimal code is deeper than kMaxCodeBits, its lengths are clamped to the limit, the
// least frequent of the shorter codes lengthened until the Kraft sum is 1 or less, and the most
// frequent shortened again while it stays so (the heuristic of zstd's and JPEG's coders).
std::vector<uint8_t> code_lengths(std::span<const uint64_t> histogram);

// How a block of n exponents with this histogram (f.symbols() counts) is stored, the format's
// rule: constant where one value occurs; Huffman-coded where the coded section is bounded (codes,
// table, stream sizes, a partial byte per stream) at least 8 bytes below the raw one's n bytes,
// which leaves the fast writer's 8-byte stores inside a raw block's room; raw otherwise.
struct BlockPlan {
  BlockMode mode = BlockMode::kRaw;
  uint8_t symbol = 0;            // kConstant: the value
  std::vector<uint8_t> lengths;  // kHuffman: the code lengths
};
BlockPlan plan_block(std::span<const uint64_t> histogram, size_t n, Fields f);

// A symbol's code as written: `length` bits, LSB-first (the canonical code bit-reversed).
struct Code {
  uint16_t bits = 0;
  uint8_t length = 0;
};

// Canonical codes: symbols ordered by (length, symbol) take consecutive codes. Throws
// CorruptStream if the lengths are not a prefix code (their Kraft sum exceeds 1), or none occurs.
std::vector<Code> canonical_codes(std::span<const uint8_t> lengths);

// The stored table: 4 bits per symbol, symbol 2k in the low half of byte k.
void write_lengths(std::span<const uint8_t> lengths, uint8_t* out);
// Reads `symbols` lengths; throws CorruptStream for a length above kMaxCodeBits.
std::vector<uint8_t> read_lengths(const uint8_t* in, int symbols);

// The decoding table: entry w (w < 2^kMaxCodeBits) is (symbol << 4 | length) of the code that
// the low bits of w start with, 0 where no code does (an incomplete code).
void build_decoding_table(std::span<const Code> codes, uint16_t* table);

}  // namespace hycc::codec::exphuff
