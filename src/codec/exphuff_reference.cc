#include "codec/exphuff_reference.h"

#include <algorithm>
#include <cstring>

#include "codec/block/exp_huffman.h"
#include "codec/exphuff_blocks.h"
#include "codec/exphuff_table.h"
#include "hycc/error.h"

namespace hycc::codec::reference {
namespace {

using exphuff::BlockMode;
using exphuff::Fields;

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:exphuff", what));
}

uint32_t element(ConstTensorView t, size_t i) {
  uint32_t w = 0;
  std::memcpy(&w, static_cast<const std::byte*>(t.data) + i * dtype_size(t.dtype),
              dtype_size(t.dtype));
  return w;
}

void set_element(TensorView t, size_t i, uint32_t w) {
  std::memcpy(static_cast<std::byte*>(t.data) + i * dtype_size(t.dtype), &w, dtype_size(t.dtype));
}

struct Bits {
  std::vector<uint8_t> bytes;
  size_t count = 0;
  void put(uint32_t value, int n) {
    for (int k = 0; k < n; ++k, ++count) {
      if (count % 8 == 0) bytes.push_back(0);
      bytes.back() |= static_cast<uint8_t>(((value >> k) & 1u) << (count % 8));
    }
  }
};

struct BitSource {
  const uint8_t* data;
  size_t bytes;
  size_t bit = 0;
  uint32_t get() {
    if (bit >= 8 * bytes) corrupt("codes run past the end of their stream");
    const uint32_t b = (data[bit / 8] >> (bit % 8)) & 1u;
    ++bit;
    return b;
  }
};

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// Decodes one symbol by reading a bit at a time until the code read so far is one of the
// canonical codes of its length.
uint32_t read_symbol(BitSource& in, std::span<const uint8_t> lengths) {
  uint32_t code = 0, first = 0;
  for (int l = 1; l <= exphuff::kMaxCodeBits; ++l) {
    code = (code << 1) | in.get();
    std::vector<uint32_t> of_length;
    for (uint32_t s = 0; s < lengths.size(); ++s) {
      if (lengths[s] == l) of_length.push_back(s);
    }
    if (code - first < of_length.size()) return of_length[code - first];
    first = (first + static_cast<uint32_t>(of_length.size())) << 1;
  }
  corrupt("a bit pattern that is no code of the block's table");
}

}  // namespace

std::vector<std::byte> exphuff_encode(ConstTensorView in, size_t block) {
  const Fields f = exphuff::fields_of(in.dtype);
  const size_t blocks = (in.count + block - 1) / block;
  std::vector<uint8_t> directory, sections;
  Bits rests;
  for (size_t i = 0; i < in.count; ++i)
    rests.put(exphuff::rest_of(element(in, i), f), f.rest_bits());
  for (size_t b = 0; b < blocks; ++b) {
    const size_t begin = b * block, n = std::min(block, in.count - begin);
    std::vector<uint8_t> exponents(n);
    std::vector<uint64_t> histogram(static_cast<size_t>(f.symbols()), 0);
    for (size_t i = 0; i < n; ++i) {
      exponents[i] = static_cast<uint8_t>(exphuff::exponent_of(element(in, begin + i), f));
      ++histogram[exponents[i]];
    }
    const exphuff::BlockPlan plan = exphuff::plan_block(histogram, n, f);
    std::vector<uint8_t> section;
    if (plan.mode == BlockMode::kRaw) {
      section = exponents;
    } else if (plan.mode == BlockMode::kHuffman) {
      section.resize(f.table_bytes());
      exphuff::write_lengths(plan.lengths, section.data());
      const std::vector<exphuff::Code> codes = exphuff::canonical_codes(plan.lengths);
      const size_t q = exphuff::stream_elements(n);
      std::vector<std::vector<uint8_t>> streams;
      for (size_t first = 0; first < q * exphuff::kStreams; first += q) {
        Bits stream;
        for (size_t i = first; i < std::min(n, first + q); ++i) {
          stream.put(codes[exponents[i]].bits, codes[exponents[i]].length);
        }
        streams.push_back(stream.bytes);
      }
      for (int k = 0; k + 1 < exphuff::kStreams; ++k) {
        put_u32(section, static_cast<uint32_t>(streams[k].size()));
      }
      for (const auto& s : streams) section.insert(section.end(), s.begin(), s.end());
    }
    const BlockMode mode = plan.mode;
    const uint8_t symbol = plan.symbol;
    put_u32(directory, static_cast<uint32_t>(section.size()));
    directory.insert(directory.end(), {static_cast<uint8_t>(mode), symbol, 0, 0});
    sections.insert(sections.end(), section.begin(), section.end());
  }
  std::vector<std::byte> out;
  for (const auto* part : {&directory, &rests.bytes, &sections}) {
    for (const uint8_t v : *part) out.push_back(static_cast<std::byte>(v));
  }
  return out;
}

void exphuff_decode(std::span<const std::byte> payload_span, TensorView out, size_t block) {
  const Fields f = exphuff::fields_of(out.dtype);
  const auto* payload = reinterpret_cast<const uint8_t*>(payload_span.data());
  const size_t blocks = (out.count + block - 1) / block;
  const size_t rest_at = blocks * exphuff::kDirectoryEntryBytes;
  const size_t rest_bytes = exphuff::rest_area_bytes(out.count, f);
  if (payload_span.size() < rest_at + rest_bytes) corrupt("payload shorter than its fixed areas");
  BitSource rests{payload + rest_at, rest_bytes};
  size_t at = rest_at + rest_bytes;
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* entry = payload + b * exphuff::kDirectoryEntryBytes;
    const size_t begin = b * block, n = std::min(block, out.count - begin);
    const size_t bytes = get_u32(entry);
    const auto mode = static_cast<BlockMode>(entry[4]);
    if (bytes > payload_span.size() - at || entry[6] != 0 || entry[7] != 0 ||
        (mode != BlockMode::kConstant && entry[5] != 0)) {
      corrupt("invalid directory entry");
    }
    const uint8_t* section = payload + at;
    std::vector<uint32_t> exponents(n);
    if (mode == BlockMode::kConstant) {
      if (bytes != 0 || entry[5] >= f.symbols()) corrupt("invalid constant block");
      std::fill(exponents.begin(), exponents.end(), entry[5]);
    } else if (mode == BlockMode::kRaw) {
      if (bytes != n) corrupt("invalid raw block");
      for (size_t i = 0; i < n; ++i) {
        if (section[i] >= f.symbols()) corrupt("a raw exponent outside the format's range");
        exponents[i] = section[i];
      }
    } else if (mode == BlockMode::kHuffman) {
      if (bytes <= f.table_bytes() + exphuff::kStreamSizesBytes || bytes >= n) {
        corrupt("invalid coded block");
      }
      const std::vector<uint8_t> lengths = exphuff::read_lengths(section, f.symbols());
      exphuff::canonical_codes(lengths);  // rejects lengths that are no prefix code
      const uint8_t* sizes = section + f.table_bytes();
      size_t stream_at = f.table_bytes() + exphuff::kStreamSizesBytes;
      const size_t q = exphuff::stream_elements(n);
      for (int k = 0; k < exphuff::kStreams; ++k) {
        const size_t size = k + 1 < exphuff::kStreams ? get_u32(sizes + 4 * k) : bytes - stream_at;
        if (size > bytes - stream_at) corrupt("streams longer than their section");
        BitSource in{section + stream_at, size};
        const size_t first = std::min(n, k * q);
        for (size_t i = first; i < std::min(n, first + q); ++i)
          exponents[i] = read_symbol(in, lengths);
        if ((in.bit + 7) / 8 != size) corrupt("a stream longer than its codes");
        stream_at += size;
      }
    } else {
      corrupt("unknown block mode");
    }
    for (size_t i = 0; i < n; ++i) {
      uint32_t rest = 0;
      for (int k = 0; k < f.rest_bits(); ++k) rest |= rests.get() << k;
      set_element(out, begin + i, exphuff::join(exponents[i], rest, f));
    }
    at += bytes;
  }
  if (at != payload_span.size()) corrupt("bytes after the last block");
}

}  // namespace hycc::codec::reference
