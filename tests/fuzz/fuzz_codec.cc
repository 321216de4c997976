// fuzz_codec: compress() then decompress() of arbitrary tensors under codecs whose parameters the
// input picks. Properties:
// - the stream fits max_compressed_bytes() and decodes;
// - none, mpc, zstd, exphuff, and bf16/fp16 on their own dtype: bit for bit;
// - bf16/fp16 on other dtypes: each value is the round-to-nearest-even cast;
// - eb: every finite value within the bound, NaN and infinities bit for bit;
// - quant, eb, mpc, exphuff: the fast encoder writes the reference encoder's payload byte for
//   byte, and
//   the reference decoder gives the fast decoder's values;
// - zfp (float32, finite values): the payload is plain libzfp's stream for the same field.
#include <cmath>
#include <cstring>

#include "codec/eb_reference.h"
#include "codec/exphuff_reference.h"
#include "codec/float_convert.h"
#include "codec/mpc_reference.h"
#include "codec/quant_reference.h"
#include "fuzz_target.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "oracles.h"
#include "test_util.h"

namespace hycc::fuzz {
namespace {

struct Case {
  std::string spec;
  DType dtype = DType::kF32;
  uint64_t seed = 0;
  test::Buffer in{DType::kF32, 0};
};

// Input layout: codec, dtype, three parameter bytes, a u32 seed, then the elements' bytes.
Case read_case(const uint8_t* data, size_t size) {
  Input input(data, size);
  Case c;
  const uint8_t codec = input.byte() % 7;
  c.dtype = static_cast<DType>(input.byte() % 3);
  const uint8_t p0 = input.byte(), p1 = input.byte(), p2 = input.byte();
  c.seed = input.u32();
  switch (codec) {
    case 0:
      c.spec = p0 % 3 == 0 ? "none" : p0 % 3 == 1 ? "bf16" : "fp16";
      break;
    case 1:
      // p1 >= 224: rotate=hadamard with a block of 8 to 256 (powers of two).
      c.spec = p1 < 224 ? detail::concat("quant:bits=", 1 + p0 % 8, ",block=", 8 * (1 + p1 % 32),
                                         ",round=", p2 % 2 ? "stochastic" : "nearest")
                        : detail::concat("quant:bits=", 1 + p0 % 8, ",block=", 8 << (p1 % 6),
                                         ",round=", p2 % 2 ? "stochastic" : "nearest",
                                         ",rotate=hadamard");
      break;
    case 2:  // bounds from 2^-40 to 2^23, absolute or relative
      c.spec = detail::concat(
          "eb:", p1 % 2 ? "abs=" : "rel=", std::ldexp(1.0 + p2 / 256.0, p0 % 64 - 40));
      break;
    case 3:
      c.spec = detail::concat("zfp:rate=", 1 + p0 % 32);
      break;
    case 4:
      c.spec = detail::concat("zfp:accuracy=", std::ldexp(1.0, p0 % 48 - 30));
      break;
    case 5:
      c.spec = detail::concat("mpc:dim=", 1 + p0 % 64);
      break;
    default:  // zstd or exphuff
      c.spec = p1 % 2 == 0 ? detail::concat("zstd:level=", 1 + p0 % 9)
                           : detail::concat("exphuff:block=", 256 * (1 + p0 % 8));
      break;
  }
  const Bytes rest = input.rest();
  c.in = test::Buffer(c.dtype, rest.size() / dtype_size(c.dtype));
  if (c.in.count() > 0) std::memcpy(c.in.data(), rest.data(), c.in.count() * dtype_size(c.dtype));
  return c;
}

// The absolute bound an eb spec resolves to for the case's tensor.
double eb_bound(const Case& c) {
  const bool relative = c.spec.find("rel=") != std::string::npos;
  return codec::reference::eb_resolve_bound(
      c.in.view(), relative, std::stod(spec_value(c.spec, relative ? "rel" : "abs")));
}

bool same_bits(const void* a, const void* b, size_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;
}

// Plain libzfp's stream of a float32 field.
std::vector<std::byte> plain_zfp(const std::string& spec, const test::Buffer& in) {
  std::vector<float> values = in.to_floats();
  PlainZfp zfp(spec, values.data(), values.size());
  std::vector<uint64_t> words(zfp.maximum_size() / 8 + 1);
  const size_t n = zfp.compress(words);
  const auto* p = reinterpret_cast<const std::byte*>(words.data());
  return {p, p + n};
}

void check_values(const Case& c, const CodecConfig& config, const test::Buffer& out) {
  const size_t bytes = c.in.count() * dtype_size(c.dtype);
  const std::string what = c.spec + " on " + std::string(dtype_name(c.dtype));
  if (config.lossless() || (c.spec == "bf16" && c.dtype == DType::kBF16) ||
      (c.spec == "fp16" && c.dtype == DType::kF16)) {
    check(same_bits(c.in.view().data, out.view().data, bytes), what + ": not bit for bit");
    return;
  }
  const std::vector<float> x = c.in.to_floats(), y = out.to_floats();
  if (c.spec == "bf16" || c.spec == "fp16") {
    // The cast, then rounded back to the tensor's dtype (bf16 on f16: 65504 becomes 65536, inf).
    std::vector<float> cast(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      cast[i] = c.spec == "bf16" ? codec::bf16_to_f32(codec::f32_to_bf16(x[i]))
                                 : codec::f16_to_f32(codec::f32_to_f16(x[i]));
    }
    const std::vector<float> want = test::Buffer::from_floats(c.dtype, cast).to_floats();
    for (size_t i = 0; i < x.size(); ++i) {
      check(same_bits(&want[i], &y[i], 4) || (std::isnan(want[i]) && std::isnan(y[i])),
            what + ": not the rounded cast at " + std::to_string(i));
    }
  } else if (config.id() == CodecId::kEb) {
    const double bound = eb_bound(c);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isfinite(x[i])) {
        check(std::fabs(static_cast<double>(x[i]) - y[i]) <= bound,
              detail::concat(what, ": element ", i, " off by more than ", bound));
      } else {
        check(same_bits(&x[i], &y[i], 4), what + ": a non-finite value changed");
      }
    }
  }
}

std::vector<std::byte> reference_payload(const Case& c, const CodecConfig& config) {
  if (config.id() == CodecId::kQuant) {
    return codec::reference::quant_encode(quant_params(config.spec()), c.in.view(), c.seed);
  }
  if (config.id() == CodecId::kEb) {
    return codec::reference::eb_encode(c.in.view(), eb_bound(c));
  }
  if (config.id() == CodecId::kExpHuff) {
    return codec::reference::exphuff_encode(c.in.view(),
                                            std::stoul(spec_value(config.spec(), "block")));
  }
  return codec::reference::mpc_encode(c.in.view(), std::stoi(spec_value(config.spec(), "dim")));
}

}  // namespace

std::vector<Bytes> seeds() {
  std::vector<Bytes> out;
  // Every codec and dtype with special values (NaN, infinities, -0, denormals), and with smooth
  // finite values (what zfp's comparison with libzfp needs).
  for (uint8_t codec = 0; codec < 7; ++codec) {
    for (uint8_t dtype = 0; dtype < 3; ++dtype) {
      for (const bool specials : {true, false}) {
        Bytes b = {codec, dtype, uint8_t(codec * 37 + 5), uint8_t(dtype * 91), 1, 7, 0, 0, 0};
        const size_t count = 70 + codec;
        const test::Buffer values = test::Buffer::from_floats(
            static_cast<DType>(dtype), specials ? test::data_with_specials(count, codec)
                                                : make_data(DataKind::kSmooth, count, codec));
        const auto* p = static_cast<const uint8_t*>(values.view().data);
        b.insert(b.end(), p, p + values.count() * dtype_size(values.dtype()));
        out.push_back(std::move(b));
      }
    }
  }
  // exphuff on tensors with blocks long enough to be Huffman-coded (block 256, 600 values).
  for (uint8_t dtype = 0; dtype < 3; ++dtype) {
    Bytes b = {6, dtype, 0, 1, 0, 0, 0, 0, 0};
    const test::Buffer values = test::Buffer::from_floats(
        static_cast<DType>(dtype), make_data(DataKind::kGaussian, 600, dtype));
    const auto* p = static_cast<const uint8_t*>(values.view().data);
    b.insert(b.end(), p, p + values.count() * dtype_size(values.dtype()));
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace hycc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hycc;
  using fuzz::check;
  const fuzz::Case c = fuzz::read_case(data, size);
  const CodecConfig config = CodecConfig::parse(c.spec);
  const size_t cap = max_compressed_bytes(config, c.in.view());
  std::vector<uint64_t> storage(cap / 8 + 1);
  const std::span<std::byte> buffer(reinterpret_cast<std::byte*>(storage.data()), cap);
  const size_t n = compress(config, c.in.view(), buffer, {.seed = c.seed});
  check(n <= cap, c.spec + ": stream larger than max_compressed_bytes");
  const std::span<const std::byte> stream = buffer.first(n);
  test::Buffer out(c.dtype, c.in.count());
  decompress(stream, out.view());
  fuzz::check_values(c, config, out);

  const std::span<const std::byte> payload = stream_payload(stream);
  if (config.id() == CodecId::kQuant || config.id() == CodecId::kEb ||
      config.id() == CodecId::kMpc || config.id() == CodecId::kExpHuff) {
    const std::vector<std::byte> ref = fuzz::reference_payload(c, config);
    check(ref.size() == payload.size() && fuzz::same_bits(ref.data(), payload.data(), ref.size()),
          c.spec + ": the fast encoder's payload differs from the reference's");
  }
  if (config.id() == CodecId::kZfp && c.dtype == DType::kF32 && c.in.count() > 0) {
    const std::vector<float> x = c.in.to_floats();
    bool finite = true;
    for (float v : x) finite = finite && std::isfinite(v);
    if (finite) {
      const std::vector<std::byte> plain = fuzz::plain_zfp(c.spec, c.in);
      check(plain.size() == payload.size() &&
                fuzz::same_bits(plain.data(), payload.data(), plain.size()),
            c.spec + ": the payload differs from plain libzfp's stream");
    }
  }
  return 0;
}
