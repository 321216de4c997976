// "exphuff": lossless coding of floats that entropy-codes the exponent and keeps sign and
// mantissa as they are. In weights, activations and gradients the exponent takes few values
// (2-3 bits of entropy in its 8), while the mantissa is close to random: the approach of
// DFloat11, ZipNN and dietGPU. For bf16 (1 + 8 + 7 bits) it stores about 8 + 2.6 bits a value
// (ratio ~1.5), for f32 about 24 + 2.6, for f16 (1 + 5 + 10) about 11 + 2.
//
// Payload, for `count` elements in nblocks = ceil(count / block) blocks, little-endian:
//   directory  nblocks x 8 bytes: u32 bytes of the block's exponent section, u8 mode
//              (exp_huffman.h: 0 raw, 1 Huffman, 2 constant), u8 symbol (constant mode, else
//              0), u16 0.
//   rest       every element's sign and mantissa, (sign << mantissa bits) | mantissa, in
//              mantissa bits + 1 bits (8 bf16, 11 f16, 24 f32), packed LSB-first. A block
//              starts on a byte (block is a multiple of 8).
//   exponents  the blocks' sections, in block order: raw, one byte per exponent; Huffman, the
//              code-length table (4 bits per exponent value: 128 bytes, 16 for f16) and then
//              the codes of the block's exponents, LSB-first, canonical (exphuff_table.h),
//              at most 12 bits, padded to a byte; constant, nothing.
// A block is coded when that is smaller than raw and has two or more exponent values.
// The fixed areas let a parallel or GPU decoder find every block from the directory alone.
// Parameters in the stream header: bytes 0..3 block (u32), the others 0.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/block/exp_huffman.h"
#include "codec/byte_io.h"
#include "codec/exphuff_blocks.h"
#include "codec/exphuff_plan.h"
#include "codec/exphuff_table.h"
#include "codec/params_io.h"
#include "codec/registry.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

using exphuff::BlockMode;
using exphuff::Fields;
using exphuff::kDirectoryEntryBytes;
using exphuff::kMaxCodeBits;

constexpr std::string_view kHelp =
    "block=256..1048576, multiple of 256 (default 16384): elements per block, each with its own "
    "code";
constexpr int kMinBlock = 256;
constexpr int kMaxBlock = 1 << 20;
constexpr int kDefaultBlock = 16384;

using Layout = exphuff::PayloadLayout;

class ExpHuffCodec final : public Codec {
 public:
  explicit ExpHuffCodec(size_t block) : block_(block) {}

  CodecId id() const override { return CodecId::kExpHuff; }
  std::string spec() const override { return detail::concat("exphuff:block=", block_); }
  bool lossless() const override { return true; }
  CodecParams params() const override {
    CodecParams p;
    put_u32(p, 0, static_cast<uint32_t>(block_));
    return p;
  }
  // Every block raw.
  size_t max_payload_bytes(DType dtype, size_t count) const override {
    return Layout(count, block_, exphuff::fields_of(dtype)).exponents_at + count;
  }

  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions& options) const override;
  void decode(std::span<const std::byte> payload, TensorView out) const override;

 private:
  [[noreturn]] void corrupt(const std::string& what) const {
    throw CorruptStream(tagged("codec:exphuff", what));
  }
  // Codes a block's exponents; returns the section's bytes, sets mode and symbol.
  size_t put_exponents(const uint8_t* exponents, size_t n, const uint64_t* histogram, Fields f,
                       uint8_t* section, BlockMode& mode, uint8_t& symbol) const;
  void get_exponents(const uint8_t* section, size_t bytes, BlockMode mode, uint8_t symbol, size_t n,
                     Fields f, uint8_t* exponents) const;

  size_t block_;
};

size_t ExpHuffCodec::put_exponents(const uint8_t* exponents, size_t n, const uint64_t* histogram,
                                   Fields f, uint8_t* section, BlockMode& mode,
                                   uint8_t& symbol) const {
  const exphuff::BlockPlan plan = exphuff::plan_block({histogram, 256}, n, f);
  mode = plan.mode;
  symbol = plan.symbol;
  if (plan.mode == BlockMode::kConstant) return 0;
  if (plan.mode == BlockMode::kRaw) {
    std::memcpy(section, exponents, n);
    return n;
  }
  exphuff::write_lengths(plan.lengths, section);
  return f.table_bytes() + exphuff::encode_streams(exponents, n,
                                                   exphuff::canonical_codes(plan.lengths),
                                                   section + f.table_bytes());
}

size_t ExpHuffCodec::encode(ConstTensorView in, std::span<std::byte> out,
                            const CompressOptions&) const {
  const Fields f = exphuff::fields_of(in.dtype);
  const Layout layout(in.count, block_, f);
  auto* payload = reinterpret_cast<uint8_t*>(out.data());
  std::vector<uint8_t> exponents(std::min(block_, in.count));
  size_t section_at = layout.exponents_at;
  for (size_t b = 0; b < layout.blocks; ++b) {
    const size_t begin = b * block_;
    const size_t n = std::min(block_, in.count - begin);
    std::array<uint64_t, 256> histogram{};
    exphuff::split_block(in, begin, n, payload + layout.rest_at, exponents.data(),
                         histogram.data());
    BlockMode mode = BlockMode::kRaw;
    uint8_t symbol = 0;
    const size_t bytes =
        put_exponents(exponents.data(), n, histogram.data(), f, payload + section_at, mode, symbol);
    uint8_t* entry = payload + b * kDirectoryEntryBytes;
    store_u32(entry, static_cast<uint32_t>(bytes));
    entry[4] = static_cast<uint8_t>(mode);
    entry[5] = symbol;
    entry[6] = entry[7] = 0;
    section_at += bytes;
  }
  return section_at;
}

void ExpHuffCodec::get_exponents(const uint8_t* section, size_t bytes, BlockMode mode,
                                 uint8_t symbol, size_t n, Fields f, uint8_t* exponents) const {
  if (mode == BlockMode::kConstant) {
    std::memset(exponents, symbol, n);
    return;
  }
  if (mode == BlockMode::kRaw) {
    uint8_t above = 0;
    for (size_t i = 0; i < n; ++i) above |= static_cast<uint8_t>(section[i] >= f.symbols());
    if (above != 0) corrupt("a raw exponent outside the format's range");
    std::memcpy(exponents, section, n);
    return;
  }
  const std::vector<exphuff::Code> codes =
      exphuff::canonical_codes(exphuff::read_lengths(section, f.symbols()));
  std::array<uint16_t, size_t{1} << kMaxCodeBits> table;
  exphuff::build_decoding_table(codes, table.data());
  exphuff::decode_streams(section + f.table_bytes(), bytes - f.table_bytes(), n, table.data(),
                          exponents);
}

void ExpHuffCodec::decode(std::span<const std::byte> payload_span, TensorView out) const {
  const Fields f = exphuff::fields_of(out.dtype);
  const Layout layout(out.count, block_, f);
  const auto* payload = reinterpret_cast<const uint8_t*>(payload_span.data());
  exphuff::check_directory(payload, payload_span.size(), out.count, block_, f);
  std::vector<uint8_t> exponents(std::min(block_, out.count));
  size_t section_at = layout.exponents_at;
  for (size_t b = 0; b < layout.blocks; ++b) {
    const uint8_t* entry = payload + b * kDirectoryEntryBytes;
    const size_t begin = b * block_;
    const size_t n = std::min(block_, out.count - begin);
    const uint32_t bytes = load_u32(entry);
    get_exponents(payload + section_at, bytes, static_cast<BlockMode>(entry[4]), entry[5], n, f,
                  exponents.data());
    exphuff::join_block(payload + layout.rest_at, layout.exponents_at - layout.rest_at,
                        exponents.data(), begin, n, out);
    section_at += bytes;
  }
}

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  const int block = args.get_int("block", kDefaultBlock, kMinBlock, kMaxBlock);
  args.finish(kHelp);
  if (block % 256 != 0) {
    throw InvalidArgument(tagged("codec", "exphuff:block=", block, " is not a multiple of 256"));
  }
  return std::make_shared<ExpHuffCodec>(static_cast<size_t>(block));
}

std::shared_ptr<const Codec> from_params(const CodecParams& params) {
  const uint32_t block = get_u32(params, 0);
  if (block < kMinBlock || block > kMaxBlock || block % 256 != 0) {
    throw CorruptStream(tagged("codec:exphuff", "invalid block ", block, " in stream header"));
  }
  require_unused_params_zero(params, 4, "codec:exphuff");
  return std::make_shared<ExpHuffCodec>(block);
}

}  // namespace

const CodecEntry& exphuff_entry() {
  static const CodecEntry e{"exphuff", CodecId::kExpHuff, kHelp, from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
