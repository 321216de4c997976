// "quant": blockwise affine quantization. Each block of `block` consecutive values is mapped to
// `bits`-bit codes spread evenly between the block's minimum and maximum (float32 arithmetic):
//   scale = (max - min) / (2^bits - 1)           stored in the block header with min
//   t     = (x - min) * ((2^bits - 1) / (max - min))     the value in units of scale, >= 0
//   code  = round(t), ties to even               round=nearest
//         = floor(t) + (u < t - floor(t))        round=stochastic, u uniform in [0, 1): the
//                                                distribution of floor(t + u), without rounding
//                                                the sum; u comes from stochastic_noise
//   x'    = min + code * scale                   a float32 multiply, then a float32 add
// with codes clamped to [0, 2^bits - 1]. Declared error of a value of a block with scale s:
// nearest |x - x'| <= s/2, stochastic |x - x'| <= s and E[x'] = x, each up to the float32
// rounding of the expressions above (a few ulps of the block's largest magnitude). A constant
// block has scale 0 and decodes exactly (-0 as +0).
//
// rotate=hadamard (block a power of two): each full block whose values are all below 2^100 in
// magnitude is rotated before quantizing (codec/block/hadamard.h: y = H x * 2^-floor(L/2)) and
// rotated back after decoding; min and scale are the rotated block's, and the declared bound
// holds for the rotated values, so a block's root-mean-square error is at most
// 2^(floor(L/2) - L/2) times its step over 2 (nearest): an outlier raises the step of its block
// by about its magnitude over sqrt(block) instead of by its magnitude (the rotation of SDP4Bit and
// TAH-Quant). A shorter last block is quantized as it is.
//
// Special blocks. A block that holds NaN or an infinity, whose range max - min overflows, whose
// scale would be subnormal (a nonzero range below (2^bits - 1) * 2^-126: its inverse would
// overflow), whose largest decoded value would overflow, or (rotate=hadamard) that holds a
// magnitude of 2^100 or more is coded in its own header and codes, never rotated, so that the
// payload's size depends only on (count, block, bits) and both sides of a transfer know it:
//   scale field  sign bit set; bits 8..30 the step S (a float32 whose low 8 bits are 0: the step
//                rounded up to that); low byte the flags: bit 0 the block holds non-finite
//                values, bits 1-2 which (0 NaN, 1 +inf, 2 -inf: one kind, else NaN), bits 3-4
//                the exponent (0: factor 1, 1: values quantized at 1/4 and decoded times 4,
//                2: at 2^64 and times 2^-64), bits 5-7 zero.
//   min field    m, the smallest finite value times the encode factor.
//   codes        the top code 2^bits - 1 marks a non-finite value when bit 0 is set; the finite
//                values take codes 0..T, T = 2^bits - 1 - (bit 0), from
//                t = (x * factor - m) * (1 / S) as above (nearest or stochastic), at most T.
//                With T = 0 (1 bit and non-finite values) m is the middle of the finite range.
//   decoding     x' = (m + code * S) * decode factor, clamped to +-FLT_MAX (the input was finite).
// Declared error of a finite value of a special block: nearest |x - x'| <= S * decode factor / 2,
// stochastic <= S * decode factor, each up to float32 rounding (a few ulps of the block's largest
// magnitude; the factor 2^-64 rounds into subnormals: half of 2^-149); with T = 0 half the finite
// range. Non-finite values decode as non-finite: +inf and -inf exactly when the block holds one
// kind, NaN (0x7fc00000, payload not kept) otherwise.
//
// Payload, for `count` elements in nblocks = ceil(count / block) blocks, little-endian:
//   headers  nblocks x 8 bytes: per block f32 min, f32 scale (or a special block's fields).
//   codes    per block, n8 * bits / 8 bytes, where n8 is the block's element count rounded up
//            to a multiple of 8 (only the last block can be shorter than `block`). Padding codes
//            are zero.
// Its size depends only on (count, block, bits), so a parallel or GPU decoder finds every block
// without reading the others, and a receiver knows the size before anything arrives.
// Older hycc stored such blocks raw after the codes (scale field 0xffffffff): their payloads are
// rejected with a message that says so.
// Parameters in the stream header: byte 0 bits, byte 1 rounding (0 nearest, 1 stochastic),
// byte 2 rotation (0 none, 1 hadamard), bytes 4..7 block (u32), the other bytes 0.
//
// Placement of a block's n8 codes (the "segment" layout). With g = gcd(bits, 8), a word of
// per = 8 / g codes fills exactly bytes = bits / g bytes. The block is cut into `per` segments of
// len = n8 / per codes; word j (0 <= j < len) holds code r * len + j of the block in its bits
// [r * bits, (r + 1) * bits), and its byte m (little-endian) is stored at offset m * len + j.
// bits=8 is the identity, bits=4 stores code j | code (j + n8 / 2) << 4 at byte j. Every loop
// over j reads and writes contiguous memory, so the compiler vectorizes both directions.
#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "codec/block/hadamard.h"
#include "codec/block/quant_block.h"
#include "codec/byte_io.h"
#include "codec/float_io.h"
#include "codec/params_io.h"
#include "codec/registry.h"
#include "common/synthetic_data.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

constexpr std::string_view kHelp =
    "bits=1..8 (default 8), block=8..65536, multiple of 8 (default 64), "
    "round=nearest|stochastic (default nearest), rotate=none|hadamard (default none; hadamard: "
    "each full block rotated before quantizing, block a power of two)";
constexpr int kMaxBlock = 65536;
using quant::BlockQuant;
using quant::kHeaderBytes;
using quant::round_up8;

// Function multiversioning (GCC on x86-64) for loops whose every clone computes the same bits:
// integer code, and float code of single IEEE operations (no contraction into FMA: the build
// passes -ffp-contract=off; conversions truncate or round the same way in SSE2 and AVX2);
// elsewhere a no-op. Not under ThreadSanitizer: GCC instruments the clones' resolver, which the
// loader runs before the sanitizer's runtime is set up (a preloaded libhycc_mpi.so then crashes).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define HYCC_QUANT_X86_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define HYCC_QUANT_X86_CLONES
#endif

// Where the areas of a payload start, for a given element count.
using Layout = quant::PayloadLayout;

// Smallest and largest order_key of x[0, n). Baseline x86-64 (SSE2) has no packed 32-bit
// min/max, so a clone for x86-64-v3 (AVX2) is picked at load time where the CPU has it: about
// 2x on this loop, and integer code gives the same result in every clone.
HYCC_QUANT_X86_CLONES quant::KeyRange key_range(const float* x, size_t n) {
  return quant::key_range(x, n);
}

// Quantization of the block x[0, n), n >= 1; raw if it holds NaN or an infinity.
BlockQuant scan_block(const float* x, size_t n, float max_code) {
  return quant::quant_from_keys(key_range(x, n), max_code);
}

std::string hex32(uint32_t v) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", v);
  return text;
}

// Words of a block handled at once by the tiled loops below.
constexpr size_t kTileWords = 256;

// Writes the codes of x[0, n8) in the segment layout; noise is used by stochastic rounding only.
// Widths whose word is one byte (1, 2, 4, 8 bits) run quant::quantize_word per word, which the
// compiler vectorizes. With a word of several bytes (3, 5, 6, 7 bits) it did not (4.0 GB/s at
// 6 bits against 7.7 at 8), so those run the same arithmetic in tiles of words: one loop makes
// the words, one stores each byte (6 bits: 6.9 GB/s; 5 and 7 bits: +12%). The same bytes as
// quantize_word (tests compare both with the reference). The AVX2 clone: 10.1 -> 15.8 GB/s at 8
// bits (hycc-micro-bench BM_Encode/quant8).
template <int kBits, bool kStochastic>
HYCC_QUANT_X86_CLONES void quantize_block(const float* x, size_t n8, const BlockQuant& q,
                                          const float* noise, uint8_t* codes) {
  using P = quant::Packing<kBits>;
  const size_t len = n8 / P::kPer;
  if constexpr (P::kBytes == 1) {
    const auto noise_of = [noise](size_t i) { return noise[i]; };
    for (size_t j = 0; j < len; ++j) {
      quant::quantize_word<kBits, kStochastic>(x, len, j, q, noise_of, codes);
    }
  } else {
    using Word = typename P::Word;
    const BlockQuant bq = q;  // by value: the byte stores below may alias a reference
    std::array<Word, kTileWords> words;
    for (size_t j0 = 0; j0 < len; j0 += kTileWords) {
      const size_t m = std::min(kTileWords, len - j0);
      const float* xt = x + j0;
      const float* ut = kStochastic ? noise + j0 : nullptr;
      for (size_t t = 0; t < m; ++t) {
        Word word = 0;
        for (int r = 0; r < P::kPer; ++r) {
          const size_t i = static_cast<size_t>(r) * len + t;
          const float u = kStochastic ? ut[i] : 0.0f;
          word |= static_cast<Word>(quant::quantize_value<kBits, kStochastic>(xt[i], bq, u))
                  << (r * kBits);
        }
        words[t] = word;
      }
      for (int b = 0; b < P::kBytes; ++b) {
        uint8_t* out = codes + static_cast<size_t>(b) * len + j0;
        for (size_t t = 0; t < m; ++t) out[t] = static_cast<uint8_t>(words[t] >> (8 * b));
      }
    }
  }
}

// Decodes n8 codes of the segment layout into y[0, n8): quant::dequantize_word per word, but in
// tiles where a word is 2 to 4 bytes (3 and 6 bits): one loop gathers the words from their
// bytes, one per segment decodes them, both vectorized where the per-word loop was not (6 bits:
// 11.7 GB/s against 7.9). Words of 64 bits (5 and 7 bits) decode faster per word (SSE2 has no
// shift of 64-bit lanes by a count per lane: tiled was 6.9 and 6.0 GB/s against 7.9 and 7.2).
template <int kBits>
void dequantize_block(const uint8_t* codes, size_t n8, float lo, float scale, float* y) {
  using P = quant::Packing<kBits>;
  const size_t len = n8 / P::kPer;
  if constexpr (P::kBytes == 1 || sizeof(typename P::Word) > 4) {
    const auto store = [y](size_t i, float v) { y[i] = v; };
    for (size_t j = 0; j < len; ++j) quant::dequantize_word<kBits>(codes, len, j, lo, scale, store);
  } else {
    using Word = typename P::Word;
    std::array<Word, kTileWords> words;
    for (size_t j0 = 0; j0 < len; j0 += kTileWords) {
      const size_t m = std::min(kTileWords, len - j0);
      for (size_t t = 0; t < m; ++t) words[t] = codes[j0 + t];
      for (int b = 1; b < P::kBytes; ++b) {
        const uint8_t* in = codes + static_cast<size_t>(b) * len + j0;
        for (size_t t = 0; t < m; ++t) words[t] |= static_cast<Word>(in[t]) << (8 * b);
      }
      for (int r = 0; r < P::kPer; ++r) {
        float* yr = y + static_cast<size_t>(r) * len + j0;
        for (size_t t = 0; t < m; ++t) {
          const auto code = static_cast<int32_t>((words[t] >> (r * kBits)) & P::kMask);
          yr[t] = lo + static_cast<float>(code) * scale;
        }
      }
    }
  }
}

using QuantizeFn = void (*)(const float*, size_t, const BlockQuant&, const float*, uint8_t*);
using DequantizeFn = void (*)(const uint8_t*, size_t, float, float, float*);

struct Kernels {
  QuantizeFn nearest = nullptr;
  QuantizeFn stochastic = nullptr;
  DequantizeFn dequantize = nullptr;
};

template <int kBits>
constexpr Kernels kernels_for() {
  return {quantize_block<kBits, false>, quantize_block<kBits, true>, dequantize_block<kBits>};
}

constexpr std::array<Kernels, 9> kKernels = {
    Kernels{},        kernels_for<1>(), kernels_for<2>(), kernels_for<3>(), kernels_for<4>(),
    kernels_for<5>(), kernels_for<6>(), kernels_for<7>(), kernels_for<8>(),
};

// Noise of stochastic rounding for elements first.. first + n (quant::stochastic_noise).
void stochastic_noise(uint64_t seed_key, size_t first, size_t n, float* noise) {
  for (size_t i = 0; i < n; ++i) noise[i] = quant::stochastic_noise(seed_key, first + i);
}

class QuantCodec final : public Codec {
 public:
  QuantCodec(int bits, int block, bool stochastic, bool rotate)
      : bits_(bits), block_(static_cast<size_t>(block)), stochastic_(stochastic), rotate_(rotate) {}

  CodecId id() const override { return CodecId::kQuant; }
  std::string spec() const override {
    return detail::concat("quant:bits=", bits_, ",block=", block_,
                          ",round=", stochastic_ ? "stochastic" : "nearest",
                          rotate_ ? ",rotate=hadamard" : "");
  }
  bool lossless() const override { return false; }
  CodecParams params() const override {
    CodecParams p;
    put_u8(p, 0, static_cast<uint8_t>(bits_));
    put_u8(p, 1, stochastic_ ? 1 : 0);
    put_u8(p, 2, rotate_ ? 1 : 0);
    put_u32(p, 4, static_cast<uint32_t>(block_));
    return p;
  }

  // Special blocks are stored in-band: the size never depends on the data.
  size_t max_payload_bytes(DType, size_t count) const override {
    return Layout(count, block_, bits_).bytes;
  }
  std::optional<size_t> regular_payload_bytes(DType, size_t count) const override {
    return Layout(count, block_, bits_).bytes;
  }

  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions& options) const override;
  void decode(std::span<const std::byte> payload, TensorView out) const override;

 private:
  float max_code() const { return static_cast<float>((1u << bits_) - 1); }
  // Bytes of the codes of a block of n elements.
  size_t code_bytes(size_t n) const { return round_up8(n) / 8 * static_cast<size_t>(bits_); }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw CorruptStream(tagged("codec:" + spec(), what));
  }

  // Whether block b of n elements is rotated (when not special).
  bool rotated(size_t n) const { return rotate_ && n == block_; }
  // Header and codes of the special block x[0, n) (the input's values, not rotated) starting at
  // element `begin` of the tensor.
  void encode_special(const float* x, size_t n, size_t begin, uint64_t seed_key, uint8_t* header,
                      uint8_t* codes) const;
  // Validates block b's header; throws CorruptStream if it is malformed.
  void check_header(size_t b, uint32_t min_bits, uint32_t scale_bits) const;

  int bits_;
  size_t block_;
  bool stochastic_;
  bool rotate_;
};

void QuantCodec::encode_special(const float* x, size_t n, size_t begin, uint64_t seed_key,
                                uint8_t* header, uint8_t* codes) const {
  const quant::SpecialQuant q = quant::choose_special(quant::special_scan(x, n), (1u << bits_) - 1);
  std::memcpy(header, &q.min, 4);
  store_u32(header + 4, q.scale_bits);
  const quant::SegmentLayout layout(bits_, round_up8(n));
  const auto code_of = [&](size_t i) -> uint32_t {
    if (i >= n) return 0;
    if (!stochastic_) return quant::special_code<false>(x[i], q, 0.0f);
    return quant::special_code<true>(x[i], q, quant::stochastic_noise(seed_key, begin + i));
  };
  for (size_t j = 0; j < layout.len; ++j) layout.put_word(j, code_of, codes);
}

size_t QuantCodec::encode(ConstTensorView in, std::span<std::byte> out,
                          const CompressOptions& options) const {
  const size_t count = in.count;
  const Layout layout(count, block_, bits_);
  auto* payload = reinterpret_cast<uint8_t*>(out.data());
  const Kernels& kernels = kKernels[static_cast<size_t>(bits_)];
  const QuantizeFn quantize = stochastic_ ? kernels.stochastic : kernels.nearest;
  const uint64_t seed_key = quant::noise_key(options.seed);
  const float top = max_code();

  // Float copy of a block (16-bit inputs, or a last block padded to a multiple of 8).
  std::vector<float> values(std::min(block_, round_up8(count)));
  std::vector<float> noise(stochastic_ ? values.size() : 0);
  for (size_t b = 0; b < layout.blocks; ++b) {
    const size_t begin = b * block_;
    const size_t n = std::min(block_, count - begin);
    const size_t n8 = round_up8(n);
    const float* x = values.data();
    bool too_large = false;
    if (in.dtype == DType::kF32 && n == n8 && !rotated(n)) {
      x = static_cast<const float*>(in.data) + begin;
    } else {
      load_as_float(in, begin, n, values.data());
    }
    if (rotated(n)) {
      too_large = !quant::rotatable(values.data(), n);
      if (!too_large) quant::hadamard_forward(values.data(), n);
    }
    BlockQuant q = scan_block(x, n, top);
    uint8_t* header = payload + b * kHeaderBytes;
    uint8_t* codes = payload + layout.codes_at + begin / 8 * static_cast<size_t>(bits_);
    if (q.special || too_large) {
      if (rotated(n) && !too_large) load_as_float(in, begin, n, values.data());  // unrotated
      encode_special(x, n, begin, seed_key, header, codes);
      continue;
    }
    std::fill(values.data() + n, values.data() + n8, q.min);  // padding codes are 0
    std::memcpy(header, &q.min, 4);
    std::memcpy(header + 4, &q.scale, 4);
    if (stochastic_) stochastic_noise(seed_key, begin, n8, noise.data());
    quantize(x, n8, q, noise.data(), codes);
  }
  return layout.bytes;
}

void QuantCodec::check_header(size_t b, uint32_t min_bits, uint32_t scale_bits) const {
  if (scale_bits == 0xffffffffu) {
    corrupt(detail::concat("block ", b, " is marked raw: a payload of an older hycc, which ",
                           "stored special blocks after the codes; this build stores them in ",
                           "the block (re-encode the data)"));
  }
  if (quant::header_valid(min_bits, scale_bits, (1u << bits_) - 1)) return;
  if ((scale_bits & quant::kSpecialBit) != 0) {
    corrupt(detail::concat("special block ", b, " has an invalid header (min bits 0x",
                           hex32(min_bits), ", scale field 0x", hex32(scale_bits), ")"));
  }
  corrupt(detail::concat("block ", b, " has an invalid min ", std::bit_cast<float>(min_bits),
                         " or scale ", std::bit_cast<float>(scale_bits)));
}

void QuantCodec::decode(std::span<const std::byte> payload_span, TensorView out) const {
  const size_t count = out.count;
  const Layout layout(count, block_, bits_);
  const auto* payload = reinterpret_cast<const uint8_t*>(payload_span.data());
  if (payload_span.size() != layout.bytes) {
    corrupt(detail::concat("payload of ", payload_span.size(), " bytes, expected the ",
                           layout.bytes, " bytes of block headers and codes of ", count,
                           " elements"));
  }
  // Validate every header before writing anything.
  for (size_t b = 0; b < layout.blocks; ++b) {
    const uint8_t* header = payload + b * kHeaderBytes;
    check_header(b, load_u32(header), load_u32(header + 4));
  }

  const DequantizeFn dequantize = kKernels[static_cast<size_t>(bits_)].dequantize;
  std::vector<float> values(std::min(block_, round_up8(count)));
  for (size_t b = 0; b < layout.blocks; ++b) {
    const size_t begin = b * block_;
    const size_t n = std::min(block_, count - begin);
    const uint8_t* header = payload + b * kHeaderBytes;
    const uint32_t min_bits = load_u32(header), scale_bits = load_u32(header + 4);
    const uint8_t* codes = payload + layout.codes_at + begin / 8 * static_cast<size_t>(bits_);
    if ((scale_bits & quant::kSpecialBit) != 0) {
      quant::SpecialHeader h;
      quant::read_special(min_bits, scale_bits, (1u << bits_) - 1, h);
      const quant::SegmentLayout segments(bits_, round_up8(n));
      for (size_t i = 0; i < n; ++i) values[i] = quant::special_value(segments.code(codes, i), h);
      store_from_float(values.data(), n, out, begin);
      continue;
    }
    const float lo = std::bit_cast<float>(min_bits), scale = std::bit_cast<float>(scale_bits);
    const bool direct = out.dtype == DType::kF32 && n == round_up8(n) && !rotated(n);
    float* y = direct ? static_cast<float*>(out.data) + begin : values.data();
    dequantize(codes, round_up8(n), lo, scale, y);
    if (rotated(n)) quant::hadamard_inverse(values.data(), n);
    if (!direct) store_from_float(values.data(), n, out, begin);
  }
}

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  const int bits = args.get_int("bits", 8, 1, 8);
  const int block = args.get_int("block", 64, 8, kMaxBlock);
  const std::string round = args.get_choice("round", "nearest", {"nearest", "stochastic"});
  const std::string rotate = args.get_choice("rotate", "none", {"none", "hadamard"});
  args.finish(kHelp);
  if (block % 8 != 0) {
    throw InvalidArgument(tagged("codec", "bad value '", block, "' for 'block' in spec '",
                                 args.spec(), "': expected a multiple of 8 in [8, ", kMaxBlock,
                                 "]"));
  }
  if (rotate == "hadamard" && !quant::is_power_of_two(static_cast<uint64_t>(block))) {
    throw InvalidArgument(tagged("codec", "bad value '", block, "' for 'block' in spec '",
                                 args.spec(), "': rotate=hadamard needs a power of two"));
  }
  return std::make_shared<QuantCodec>(bits, block, round == "stochastic", rotate == "hadamard");
}

std::shared_ptr<const Codec> from_params(const CodecParams& p) {
  const int bits = get_u8(p, 0), round = get_u8(p, 1), rotate = get_u8(p, 2);
  const uint32_t block = get_u32(p, 4);
  bool unused_zero = get_u8(p, 3) == 0;
  for (size_t at = 8; at < p.bytes.size(); ++at) unused_zero = unused_zero && get_u8(p, at) == 0;
  if (bits < 1 || bits > 8 || round > 1 || rotate > 1 || block < 8 || block > kMaxBlock ||
      block % 8 != 0 || (rotate == 1 && !quant::is_power_of_two(block)) || !unused_zero) {
    throw CorruptStream(tagged("codec:quant", "invalid parameters in stream header: bits ", bits,
                               ", round ", round, ", rotate ", rotate, ", block ", block));
  }
  return std::make_shared<QuantCodec>(bits, static_cast<int>(block), round == 1, rotate == 1);
}

}  // namespace

const CodecEntry& quant_entry() {
  static const CodecEntry e{"quant", CodecId::kQuant, kHelp, from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
