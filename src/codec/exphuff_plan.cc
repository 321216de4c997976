#include "codec/exphuff_plan.h"

#include <algorithm>
#include <array>
#include <string>

#include "codec/byte_io.h"
#include "codec/exphuff_blocks.h"
#include "codec/exphuff_table.h"
#include "hycc/error.h"

namespace hycc::codec::exphuff {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:exphuff", what));
}

size_t block_elements(size_t count, size_t block, size_t b) {
  return std::min(block, count - b * block);
}

DevicePlan empty_plan(size_t blocks) {
  DevicePlan plan;
  plan.directory.assign(blocks * kDirectoryEntryBytes, 0);
  plan.section_at.assign(blocks, 0);
  plan.heads.assign(blocks * kHeadStride, 0);
  plan.codes.assign(blocks * 256, 0);
  plan.streams.assign(blocks * kStreams, StreamSpan{});
  return plan;
}

void put_codes(const std::vector<Code>& codes, uint32_t* out) {
  for (size_t s = 0; s < codes.size(); ++s) out[s] = packed_code(codes[s].bits, codes[s].length);
}

}  // namespace

DevicePlan plan_encoding(const uint32_t* histograms, size_t count, size_t block, Fields f) {
  const PayloadLayout layout(count, block, f);
  DevicePlan plan = empty_plan(layout.blocks);
  uint64_t at = layout.exponents_at;
  for (size_t b = 0; b < layout.blocks; ++b) {
    const size_t n = block_elements(count, block, b);
    const uint32_t* h = histograms + b * kStreams * 256;
    std::array<uint64_t, 256> histogram{};
    for (int k = 0; k < kStreams; ++k) {
      for (size_t s = 0; s < 256; ++s) histogram[s] += h[k * 256 + s];
    }
    const BlockPlan bp = plan_block(histogram, n, f);
    uint64_t bytes = 0;
    if (bp.mode == BlockMode::kRaw) {
      bytes = n;
      plan.streams[b * kStreams] = {at, static_cast<uint32_t>(n), 0};
    } else if (bp.mode == BlockMode::kHuffman) {
      const std::vector<Code> codes = canonical_codes(bp.lengths);
      put_codes(codes, &plan.codes[b * 256]);
      uint8_t* head = &plan.heads[b * kHeadStride];
      write_lengths(bp.lengths, head);
      bytes = f.table_bytes() + kStreamSizesBytes;
      for (int k = 0; k < kStreams; ++k) {
        uint64_t bits = 0;
        for (size_t s = 0; s < codes.size(); ++s)
          bits += uint64_t{h[k * 256 + s]} * codes[s].length;
        const auto stream_bytes = static_cast<uint32_t>((bits + 7) / 8);
        if (k < kStreams - 1) store_u32(head + f.table_bytes() + 4 * k, stream_bytes);
        plan.streams[b * kStreams + k] = {at + bytes, stream_bytes, 0};
        bytes += stream_bytes;
      }
    }
    uint8_t* entry = &plan.directory[b * kDirectoryEntryBytes];
    store_u32(entry, static_cast<uint32_t>(bytes));
    entry[4] = static_cast<uint8_t>(bp.mode);
    entry[5] = bp.symbol;
    plan.section_at[b] = at;
    at += bytes;
  }
  plan.payload_bytes = at;
  return plan;
}

std::vector<uint64_t> check_directory(const uint8_t* directory, size_t payload_bytes, size_t count,
                                      size_t block, Fields f) {
  const PayloadLayout layout(count, block, f);
  if (payload_bytes < layout.exponents_at) {
    corrupt(detail::concat("payload of ", payload_bytes, " bytes is shorter than the ",
                           layout.exponents_at, " bytes of directory and rest area of ", count,
                           " elements"));
  }
  std::vector<uint64_t> section_at(layout.blocks);
  uint64_t at = layout.exponents_at;
  for (size_t b = 0; b < layout.blocks; ++b) {
    const uint8_t* entry = directory + b * kDirectoryEntryBytes;
    const size_t n = block_elements(count, block, b);
    const uint32_t bytes = load_u32(entry);
    const auto mode = static_cast<BlockMode>(entry[4]);
    const bool ok = (mode == BlockMode::kRaw && bytes == n) ||
                    (mode == BlockMode::kHuffman && bytes > f.table_bytes() && bytes < n) ||
                    (mode == BlockMode::kConstant && bytes == 0 && entry[5] < f.symbols());
    if (!ok || (mode != BlockMode::kConstant && entry[5] != 0) || entry[6] != 0 || entry[7] != 0) {
      corrupt(detail::concat("block ", b, " has an invalid directory entry (mode ", int(entry[4]),
                             ", ", bytes, " bytes, for ", n, " elements)"));
    }
    section_at[b] = at;
    at += bytes;
  }
  if (payload_bytes != at) {
    corrupt(detail::concat("payload of ", payload_bytes, " bytes, the directory declares ", at));
  }
  return section_at;
}

DevicePlan plan_decoding(const uint8_t* directory, std::vector<uint64_t> section_at,
                         const uint8_t* heads, size_t payload_bytes, Fields f) {
  const size_t blocks = section_at.size();
  DevicePlan plan = empty_plan(blocks);
  plan.payload_bytes = payload_bytes;
  plan.directory.assign(directory, directory + blocks * kDirectoryEntryBytes);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* entry = directory + b * kDirectoryEntryBytes;
    const uint64_t at = section_at[b];
    const uint32_t bytes = load_u32(entry);
    if (static_cast<BlockMode>(entry[4]) == BlockMode::kRaw) {
      plan.streams[b * kStreams] = {at, bytes, 0};
      continue;
    }
    if (static_cast<BlockMode>(entry[4]) != BlockMode::kHuffman) continue;
    const uint8_t* head = heads + b * kHeadStride;
    put_codes(canonical_codes(read_lengths(head, f.symbols())), &plan.codes[b * 256]);
    const auto sizes = stream_sizes(head + f.table_bytes(), bytes - f.table_bytes());
    uint64_t used = f.table_bytes() + kStreamSizesBytes;
    for (int k = 0; k < kStreams; ++k) {
      plan.streams[b * kStreams + k] = {at + used, static_cast<uint32_t>(sizes[k]), 0};
      used += sizes[k];
    }
  }
  plan.section_at = std::move(section_at);
  return plan;
}

}  // namespace hycc::codec::exphuff
