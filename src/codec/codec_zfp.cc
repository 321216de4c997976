// "zfp": zfp compression (https://zfp.io) of the tensor as a 1-D zfp_type_float field, written and
// read by our own coders (codec/zfp_fixed_rate.h and codec/zfp_fixed_accuracy.h, whose per-block
// code in codec/block/zfp_block.h the CUDA kernels share); tests/unit/zfp_fixed_rate_test.cc and
// zfp_fixed_accuracy_test.cc prove their streams bit-identical to libzfp's. libzfp itself only
// says which rate or tolerance it applies to a spec.
//
// Specs: zfp:rate=R      fixed-rate, R bits per value, 0 < R <= 32; zfp applies
//                         max(round(4 R), 9) / 4, so the canonical spec shows a multiple of 0.25.
//        zfp:accuracy=T  fixed-accuracy, |x - x'| <= T on f32 data, 0 < T <= 1e38; zfp applies
//                         the largest power of two <= T, which the canonical spec shows.
// bf16/f16 inputs are widened to float (exactly); decoded floats are rounded to nearest even.
//
// Interoperability: the payload starts with exactly the bitstream plain libzfp writes for the
// same field with zfp_stream_set_rate(R, zfp_type_float, 1, zfp_false) or
// zfp_stream_set_accuracy(T), without a zfp header (the hycc stream header carries the
// parameters). Plain libzfp decodes our payloads, since it stops at the end of its bitstream, and
// a plain libzfp stream wrapped by frame_payload() decodes here. (Debian's libzfp writes whole
// bytes; a libzfp built with 64-bit stream words pads its bitstream with up to 7 zero bytes,
// which this codec neither writes nor accepts.)
//
// zfp cannot represent NaN or infinities: they reach zfp as 0 and are restored bit for bit from an
// exception list. Payload layouts (integers little-endian, k = number of non-finite values):
//   plain       [zfp bitstream]                                          k == 0
//   exceptions  [zfp bitstream][k x u64 position][k x element bits][trailer]  1 <= k <= count/64+1
//   raw         [zero bitstream][count elements, verbatim][trailer]     k > count/64 + 1
//   trailer     20 bytes: u64 bitstream bytes, u64 k (0 for raw), u8 layout (1 exceptions, 2 raw),
//               "ZFX".
// Positions increase strictly; element bits are those of the input dtype (2 or 4 bytes).
//
// Telling layouts apart without trusting a magic number: in fixed-rate mode the bitstream has
// exactly Z = ceil(ceil(count / 4) * 4R / 8) bytes, a payload of Z bytes is plain and any other
// has a trailer; the raw layout has no bitstream ("zero bitstream" is empty) and gets one zero
// pad byte in the rare case that its size would be Z. In fixed-accuracy mode decoding the
// bitstream tells its length Z; a payload of Z bytes is plain, a longer one has a trailer whose
// bitstream length must be Z, so the raw layout starts with the bitstream of an all-zero field
// (one 0 bit per block of 4 values: ceil(count / 32) zero bytes).
//
// Safety: our readers never read outside the payload (bits past its end read as zeros). A float
// block of 4 values takes at most 1 + 8 + 4 * 32 + 3 = 140 bits (zfp_stream_maximum_size counts
// the same), a fixed-rate block exactly 4R bits; the fixed-accuracy decoder reads at most 140
// bits per block, as libzfp given maxbits = 140 would, which changes nothing for a valid stream.
// A bitstream whose blocks run past the end of the payload is rejected.
#include <zfp.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include "codec/float_io.h"
#include "codec/params_io.h"
#include "codec/registry.h"
#include "codec/zfp_fixed_accuracy.h"
#include "codec/zfp_fixed_rate.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

constexpr std::string_view kTag = "codec:zfp";
constexpr std::string_view kHelp =
    "rate=R, 0 < R <= 32 bits per value (fixed-rate; zfp applies a multiple of 0.25, at least "
    "2.25) or accuracy=T, 0 < T <= 1e38 (fixed-accuracy, |x - x'| <= T; zfp applies the largest "
    "power of two <= T); exactly one of them, no default";

enum class Mode : uint8_t { kFixedRate = 1, kFixedAccuracy = 2 };
enum class Layout : uint8_t { kExceptions = 1, kRaw = 2 };

constexpr size_t kBlockValues = 4;                      // zfp codes 1-D fields in blocks of 4
constexpr uint32_t kMaxBlockBits = 1 + 8 + 4 * 32 + 3;  // flag, exponent, 32 bit planes, tests
constexpr uint32_t kMinRateBlockBits = 1 + 8;           // zfp_stream_set_rate's floor for floats
constexpr uint32_t kMaxRateBlockBits = 4 * 32;          // rate 32
constexpr double kMaxRate = 32;
constexpr double kMaxAccuracy = 1e38;
constexpr int kMinAccuracyExp = -1022;  // 2^-1022: spec values are normal doubles
constexpr int kMaxAccuracyExp = 126;    // 1e38 rounds down to 2^126
constexpr size_t kTrailerBytes = 20;
constexpr std::array<uint8_t, 3> kTrailerMagic = {'Z', 'F', 'X'};
constexpr size_t kPositionBytes = 8;
constexpr size_t kChunkValues = 4096;  // floats converted at a time: 16 KiB on the stack

static_assert(kChunkValues % kBlockValues == 0, "chunks hold whole blocks");

[[noreturn]] void corrupt(const std::string& what) { throw CorruptStream(tagged(kTag, what)); }

uint64_t block_count(uint64_t count) { return (count + kBlockValues - 1) / kBlockValues; }

// ceil(blocks * bits_per_block / 8) without overflow for any count the stream layer admits.
uint64_t bitstream_bytes(uint64_t blocks, uint64_t bits_per_block) {
  return blocks / 8 * bits_per_block + (blocks % 8 * bits_per_block + 7) / 8;
}

// Most non-finite values listed one by one; more switch to the raw layout, so that a payload is
// never much larger than the raw tensor plus zfp's own maximum.
uint64_t exception_cap(uint64_t count) { return count / 64 + 1; }

uint64_t exception_section_bytes(uint64_t k, DType dtype) {
  return k * (kPositionBytes + dtype_size(dtype));
}

uint64_t load_u64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void store_u64(std::byte* p, uint64_t v) { std::memcpy(p, &v, 8); }

bool is_finite_bits(const std::byte* element, DType dtype) {
  if (dtype == DType::kF32) {
    uint32_t b;
    std::memcpy(&b, element, 4);
    return (b & 0x7f800000u) != 0x7f800000u;
  }
  uint16_t h;
  std::memcpy(&h, element, 2);
  const uint16_t exponent = dtype == DType::kBF16 ? 0x7f80 : 0x7c00;
  return (h & exponent) != exponent;
}

// Branch-free scan, so that the common all-finite chunk costs one vectorized pass.
bool all_finite(const float* values, size_t n) {
  uint32_t non_finite = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, values + i, 4);
    non_finite |= static_cast<uint32_t>((b & 0x7f800000u) == 0x7f800000u);
  }
  return non_finite == 0;
}

// Shortest decimal that parses back to the same double ("8", "2.25", "7.62939453125e-06").
std::string shortest(double v) {
  std::array<char, 32> buf;
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), result.ptr);
}

struct ZfpStreamCloser {
  void operator()(zfp_stream* zfp) const { zfp_stream_close(zfp); }
};
using ZfpStreamPtr = std::unique_ptr<zfp_stream, ZfpStreamCloser>;

struct Trailer {
  uint64_t bitstream_bytes = 0;
  uint64_t exceptions = 0;
  Layout layout = Layout::kExceptions;
};

void write_trailer(std::byte* at, const Trailer& t) {
  store_u64(at, t.bitstream_bytes);
  store_u64(at + 8, t.exceptions);
  at[16] = static_cast<std::byte>(t.layout);
  std::memcpy(at + 17, kTrailerMagic.data(), kTrailerMagic.size());
}

Trailer read_trailer(std::span<const std::byte> payload, uint64_t plain_bytes) {
  if (payload.size() < kTrailerBytes) {
    corrupt(detail::concat("payload of ", payload.size(), " bytes is neither a zfp bitstream of ",
                           plain_bytes, " bytes nor long enough for a trailer"));
  }
  const std::byte* at = payload.data() + payload.size() - kTrailerBytes;
  if (std::memcmp(at + 17, kTrailerMagic.data(), kTrailerMagic.size()) != 0) {
    corrupt(detail::concat("payload of ", payload.size(), " bytes is not a zfp bitstream of ",
                           plain_bytes, " bytes and has no trailer"));
  }
  const auto layout = static_cast<uint8_t>(at[16]);
  if (layout != static_cast<uint8_t>(Layout::kExceptions) &&
      layout != static_cast<uint8_t>(Layout::kRaw)) {
    corrupt(detail::concat("unknown payload layout ", int{layout}, " in trailer"));
  }
  return {load_u64(at), load_u64(at + 8), static_cast<Layout>(layout)};
}

class ZfpCodec final : public Codec {
 public:
  ZfpCodec(Mode mode, uint32_t rate_block_bits, int accuracy_exp)
      : mode_(mode), rate_block_bits_(rate_block_bits), accuracy_exp_(accuracy_exp) {}

  CodecId id() const override { return CodecId::kZfp; }
  bool lossless() const override { return false; }

  std::string spec() const override {
    return mode_ == Mode::kFixedRate ? "zfp:rate=" + shortest(rate())
                                     : "zfp:accuracy=" + shortest(accuracy());
  }

  // Byte 0: mode. Bytes 4-7: bits per block of 4 values (fixed-rate) or the exponent e of the
  // tolerance 2^e (fixed-accuracy, two's complement). Other bytes zero.
  CodecParams params() const override {
    CodecParams p;
    put_u8(p, 0, static_cast<uint8_t>(mode_));
    put_u32(p, 4,
            mode_ == Mode::kFixedRate ? rate_block_bits_ : static_cast<uint32_t>(accuracy_exp_));
    return p;
  }

  // Fixed-rate: the bitstream alone (finite data); fixed-accuracy sizes depend on the data.
  std::optional<size_t> regular_payload_bytes(DType, size_t count) const override {
    if (mode_ != Mode::kFixedRate) return std::nullopt;
    return count == 0 ? 0 : static_cast<size_t>(rate_bitstream_bytes(count));
  }

  size_t max_payload_bytes(DType dtype, size_t count) const override {
    if (count == 0) return 0;
    const uint64_t bitstream_max = mode_ == Mode::kFixedRate
                                       ? rate_bitstream_bytes(count)
                                       : bitstream_bytes(block_count(count), kMaxBlockBits);
    const uint64_t with_exceptions =
        bitstream_max + exception_section_bytes(exception_cap(count), dtype) + kTrailerBytes;
    return static_cast<size_t>(std::max(with_exceptions, raw_layout_bytes(dtype, count)));
  }

  // Streams come from our own coders (codec/zfp_fixed_rate.h, codec/zfp_fixed_accuracy.h:
  // libzfp's streams, bit for bit).
  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions&) const override {
    if (in.count == 0) return 0;
    if (mode_ == Mode::kFixedRate) {
      zfp::FixedRateWriter writer(out.data(), rate_block_bits_);
      return encode_with(writer, in, out);
    }
    zfp::FixedAccuracyWriter writer(out.data(), accuracy_exp_);
    return encode_with(writer, in, out);
  }
  // Writes the bitstream with `writer`, then the exception section or the raw layout.
  template <class Writer>
  size_t encode_with(Writer& writer, ConstTensorView in, std::span<std::byte> out) const {
    const uint64_t cap = exception_cap(in.count);
    std::vector<uint64_t> positions;  // of the non-finite values, at most `cap`
    std::array<float, kChunkValues> chunk;
    for (size_t begin = 0; begin < in.count; begin += kChunkValues) {
      const size_t n = std::min(kChunkValues, in.count - begin);
      load_as_float(in, begin, n, chunk.data());
      if (!all_finite(chunk.data(), n)) {
        for (size_t i = 0; i < n; ++i) {
          if (std::isfinite(chunk[i])) continue;
          if (positions.size() == cap) return encode_raw(in, out);
          positions.push_back(begin + i);
          chunk[i] = 0.0f;
        }
      }
      writer.write(chunk.data(), n);
    }
    const size_t zfp_bytes = writer.finish();
    if (positions.empty()) return zfp_bytes;

    const size_t element = dtype_size(in.dtype);
    std::byte* at = out.data() + zfp_bytes;
    for (uint64_t p : positions) {
      store_u64(at, p);
      at += kPositionBytes;
    }
    for (uint64_t p : positions) {
      std::memcpy(at, static_cast<const std::byte*>(in.data) + p * element, element);
      at += element;
    }
    write_trailer(at, {zfp_bytes, positions.size(), Layout::kExceptions});
    return static_cast<size_t>(at + kTrailerBytes - out.data());
  }

  void decode(std::span<const std::byte> payload, TensorView out) const override {
    if (out.count == 0) {
      if (!payload.empty()) {
        corrupt(detail::concat("payload of ", payload.size(), " bytes for 0 values"));
      }
      return;
    }
    uint64_t zfp_bytes = 0;
    if (mode_ == Mode::kFixedRate) {
      zfp_bytes = rate_bitstream_bytes(out.count);
      if (payload.size() == zfp_bytes) {
        decode_bitstream(payload, out);
        return;
      }
    } else {
      zfp_bytes = decode_bitstream(payload, out);
      if (payload.size() == zfp_bytes) return;
    }

    const Trailer trailer = read_trailer(payload, zfp_bytes);
    if (trailer.layout == Layout::kRaw) {
      // Fixed-rate raw payloads have no bitstream; fixed-accuracy ones start with the one that
      // decoding just measured, which must be that of an all-zero field.
      const uint64_t zero_bitstream =
          mode_ == Mode::kFixedRate ? 0 : bitstream_bytes(block_count(out.count), 1);
      if ((mode_ == Mode::kFixedAccuracy && zfp_bytes != zero_bitstream) ||
          trailer.bitstream_bytes != zero_bitstream || trailer.exceptions != 0 ||
          payload.size() != raw_layout_bytes(out.dtype, out.count)) {
        corrupt(detail::concat("inconsistent raw layout: trailer says ", trailer.bitstream_bytes,
                               " bitstream bytes and ", trailer.exceptions,
                               " exceptions in a payload of ", payload.size(), " bytes"));
      }
      std::memcpy(out.data, payload.data() + zero_bitstream, out.bytes());
      return;
    }

    const uint64_t k = trailer.exceptions;
    if (trailer.bitstream_bytes != zfp_bytes || k == 0 || k > exception_cap(out.count) ||
        payload.size() != zfp_bytes + exception_section_bytes(k, out.dtype) + kTrailerBytes) {
      corrupt(detail::concat("inconsistent trailer: ", trailer.bitstream_bytes,
                             " bitstream bytes (expected ", zfp_bytes, ") and ", k,
                             " exceptions (at most ", exception_cap(out.count),
                             ") in a payload of ", payload.size(), " bytes"));
    }
    const std::span<const std::byte> section = payload.subspan(
        static_cast<size_t>(zfp_bytes), static_cast<size_t>(exception_section_bytes(k, out.dtype)));
    check_exceptions(section, k, out);
    if (mode_ == Mode::kFixedRate) {
      decode_bitstream(payload.first(static_cast<size_t>(zfp_bytes)), out);
    }
    apply_exceptions(section, k, out);
  }

 private:
  double rate() const { return rate_block_bits_ / double{kBlockValues}; }
  double accuracy() const { return std::ldexp(1.0, accuracy_exp_); }

  uint64_t rate_bitstream_bytes(uint64_t count) const {
    return bitstream_bytes(block_count(count), rate_block_bits_);
  }

  uint64_t raw_layout_bytes(DType dtype, uint64_t count) const {
    if (mode_ == Mode::kFixedAccuracy) {
      return bitstream_bytes(block_count(count), 1) + count * dtype_size(dtype) + kTrailerBytes;
    }
    const uint64_t bytes = count * dtype_size(dtype) + kTrailerBytes;
    return bytes == rate_bitstream_bytes(count) ? bytes + 1 : bytes;
  }

  size_t encode_raw(ConstTensorView in, std::span<std::byte> out) const {
    size_t at = 0;
    if (mode_ == Mode::kFixedAccuracy) {
      at = static_cast<size_t>(bitstream_bytes(block_count(in.count), 1));
      std::memset(out.data(), 0, at);  // one 0 bit ("all zero") per block
    }
    const size_t zero_bitstream = at;
    std::memcpy(out.data() + at, in.data, in.bytes());
    at += in.bytes();
    if (at + kTrailerBytes != raw_layout_bytes(in.dtype, in.count)) out[at++] = std::byte{0};
    write_trailer(out.data() + at, {zero_bitstream, 0, Layout::kRaw});
    return at + kTrailerBytes;
  }

  // Decodes all out.count values from the bitstream at the start of `part`; returns its length.
  uint64_t decode_bitstream(std::span<const std::byte> part, TensorView out) const {
    if (mode_ == Mode::kFixedRate) {
      zfp::FixedRateReader reader(part.data(), part.size(), rate_block_bits_);
      return decode_with(reader, part, out);
    }
    zfp::FixedAccuracyReader reader(part.data(), part.size(), accuracy_exp_);
    return decode_with(reader, part, out);
  }

  template <class Reader>
  uint64_t decode_with(Reader& reader, std::span<const std::byte> part, TensorView out) const {
    std::array<float, kChunkValues> chunk;
    for (size_t begin = 0; begin < out.count; begin += kChunkValues) {
      const size_t n = std::min(kChunkValues, out.count - begin);
      float* values =
          out.dtype == DType::kF32 ? static_cast<float*>(out.data) + begin : chunk.data();
      reader.read(values, n);
      if (out.dtype != DType::kF32) store_from_float(chunk.data(), n, out, begin);
    }
    const uint64_t consumed = reader.consumed_bytes();
    if (consumed > part.size()) {  // the reader read zeros past the end
      corrupt(detail::concat("zfp bitstream runs past the end of its ", part.size(), " bytes"));
    }
    if (mode_ == Mode::kFixedRate && consumed != part.size()) {
      corrupt(
          detail::concat("fixed-rate bitstream of ", consumed, " bytes, expected ", part.size()));
    }
    return consumed;
  }

  // Positions strictly increasing and in range, element bits non-finite (as the encoder writes).
  static void check_exceptions(std::span<const std::byte> section, uint64_t k, TensorView out) {
    const size_t element = dtype_size(out.dtype);
    const std::byte* bits = section.data() + k * kPositionBytes;
    uint64_t next_allowed = 0;
    for (uint64_t i = 0; i < k; ++i) {
      const uint64_t p = load_u64(section.data() + i * kPositionBytes);
      if (p < next_allowed || p >= out.count) {
        corrupt(detail::concat("exception ", i, " at position ", p, ", expected ", next_allowed,
                               "..", out.count - 1));
      }
      next_allowed = p + 1;
      if (is_finite_bits(bits + i * element, out.dtype)) {
        corrupt(detail::concat("exception ", i, " at position ", p, " holds a finite value"));
      }
    }
  }

  static void apply_exceptions(std::span<const std::byte> section, uint64_t k, TensorView out) {
    const size_t element = dtype_size(out.dtype);
    const std::byte* bits = section.data() + k * kPositionBytes;
    auto* dst = static_cast<std::byte*>(out.data);
    for (uint64_t i = 0; i < k; ++i) {
      const uint64_t p = load_u64(section.data() + i * kPositionBytes);
      std::memcpy(dst + p * element, bits + i * element, element);
    }
  }

  Mode mode_;
  uint32_t rate_block_bits_;  // fixed-rate: bits per block of 4 values, 4 x the rate
  int accuracy_exp_;          // fixed-accuracy: the tolerance is 2^accuracy_exp_
};

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  const std::optional<double> rate = args.get_optional_double("rate", 0, kMaxRate);
  const std::optional<double> accuracy = args.get_optional_double("accuracy", 0, kMaxAccuracy);
  args.finish(kHelp);
  if (rate.has_value() == accuracy.has_value()) {
    throw InvalidArgument(tagged("codec", "spec '", args.spec(),
                                 "' needs exactly one of rate and accuracy; zfp accepts: ", kHelp));
  }
  const char* key = rate ? "rate" : "accuracy";
  if ((rate ? *rate : *accuracy) == 0) {
    throw InvalidArgument(tagged("codec", "bad value 0 for '", key, "' in spec '", args.spec(),
                                 "': expected a number in (0, ", rate ? kMaxRate : kMaxAccuracy,
                                 "]"));
  }
  // Let zfp say what it applies, as its setters do.
  ZfpStreamPtr zfp(zfp_stream_open(nullptr));
  if (!zfp) throw std::bad_alloc();
  uint32_t min_bits = 0;
  int min_exp = 0;
  if (rate) {
    zfp_stream_set_rate(zfp.get(), *rate, zfp_type_float, 1, zfp_false);
    zfp_stream_params(zfp.get(), &min_bits, nullptr, nullptr, nullptr);
    return std::make_shared<ZfpCodec>(Mode::kFixedRate, min_bits, 0);
  }
  zfp_stream_set_accuracy(zfp.get(), *accuracy);
  zfp_stream_params(zfp.get(), nullptr, nullptr, nullptr, &min_exp);
  return std::make_shared<ZfpCodec>(Mode::kFixedAccuracy, 0, min_exp);
}

std::shared_ptr<const Codec> from_params(const CodecParams& p) {
  for (size_t i : {1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}) {
    if (get_u8(p, i) != 0) corrupt(detail::concat("nonzero reserved parameter byte ", i));
  }
  const uint32_t value = get_u32(p, 4);
  switch (static_cast<Mode>(get_u8(p, 0))) {
    case Mode::kFixedRate:
      if (value < kMinRateBlockBits || value > kMaxRateBlockBits) {
        corrupt(detail::concat("fixed-rate block of ", value, " bits, expected ", kMinRateBlockBits,
                               "..", kMaxRateBlockBits));
      }
      return std::make_shared<ZfpCodec>(Mode::kFixedRate, value, 0);
    case Mode::kFixedAccuracy: {
      const auto exp = static_cast<int32_t>(value);
      if (exp < kMinAccuracyExp || exp > kMaxAccuracyExp) {
        corrupt(detail::concat("accuracy 2^", exp, ", expected 2^", kMinAccuracyExp, "..2^",
                               kMaxAccuracyExp));
      }
      return std::make_shared<ZfpCodec>(Mode::kFixedAccuracy, 0, exp);
    }
  }
  corrupt(detail::concat("unknown zfp mode ", int{get_u8(p, 0)}));
}

}  // namespace

const CodecEntry& zfp_entry() {
  static const CodecEntry e{"zfp", CodecId::kZfp, kHelp, from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
