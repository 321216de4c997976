// Codec "quant": the fast path against the reference (bit for bit), the declared error bounds,
// stochastic rounding, special blocks (non-finite values, extreme ranges), and the validation of
// the payload.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "codec/quant_reference.h"
#include "codec/registry.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "quant_test_util.h"
#include "test_util.h"

namespace hycc {
namespace {

using codec::reference::QuantParams;
using test::BlockHeader;
using test::fast_decode;
using test::fast_encode;
using test::header_of;
using test::kUlp;
using test::mixed_finite;
using test::set_header;
using test::spec_of;
using test::special_blocks;

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

TEST(QuantCodec, FastPathMatchesReferenceBitForBit) {
  size_t cases = 0;
  for (int bits = 1; bits <= 8; ++bits) {
    for (size_t block : {size_t{8}, size_t{24}, size_t{64}, size_t{256}}) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool stochastic = variant % 2 == 1, rotate = variant >= 2;
        if (rotate && block == 24) continue;  // hadamard needs a power of two
        const QuantParams p{bits, block, stochastic, rotate};
        for (DType dtype : kDTypes) {
          for (size_t count : {0, 1, 7, 63, 64, 65, 4097}) {
            for (bool specials : {false, true}) {
              const auto values =
                  specials ? test::data_with_specials(count, 5) : mixed_finite(count);
              // (from_floats of no values would hand memcpy a null pointer)
              const test::Buffer in =
                  count == 0 ? test::Buffer(dtype, 0) : test::Buffer::from_floats(dtype, values);
              const uint64_t seed = 1000 + count;
              const auto fast = fast_encode(p, in.view(), seed);
              const auto ref = codec::reference::quant_encode(p, in.view(), seed);
              ASSERT_EQ(fast, ref) << spec_of(p) << " " << dtype_name(dtype) << " n=" << count
                                   << (specials ? " with specials" : "");
              test::Buffer fast_out(dtype, count), ref_out(dtype, count);
              fast_decode(p, fast, fast_out.view());
              codec::reference::quant_decode(p, ref, ref_out.view());
              ASSERT_TRUE(fast_out.bits_equal(ref_out))
                  << spec_of(p) << " " << dtype_name(dtype) << " n=" << count;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 8u * (4 * 2 + 3 * 2) * 3 * 7 * 2);
}

TEST(QuantCodec, LargestBlockMatchesReference) {
  const size_t count = 65536 + 65;
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, mixed_finite(count));
  // 3, 5, 6 and 7 bits: words of several bytes, coded in tiles of 256 words (many per block).
  for (int bits : {3, 5, 6, 7, 8}) {
    for (int variant = 0; variant < 4; ++variant) {
      const QuantParams p{bits, 65536, variant % 2 == 1, variant >= 2};
      EXPECT_EQ(fast_encode(p, in.view(), 7), codec::reference::quant_encode(p, in.view(), 7))
          << spec_of(p);
    }
  }
}

// Checks every decoded value against the declared bound of its block, read from the header:
// nearest |x - x'| <= scale / 2, stochastic |x - x'| <= scale, plus float rounding. Rounding
// slack: the code index t = (x - min) * inv_scale carries three roundings (x - min, the
// inverse, the product), so |t - exact| <= 3u * max_code, i.e. 3u * range in value; decoding
// min + code * scale rounds the product (u * range) and the sum (u * |x'|). With
// range <= 2 M and |x'| <= M(1 + 4u), M the block's largest magnitude, all of it stays below
// 9u * M; the test allows 12u * M. A 16-bit output adds half an ulp of its format.
// Special blocks: non-finite values decode as non-finite (the block's one infinity exactly, NaN
// for a mix), finite ones within the bound of the block's step times its factor, or of half the
// finite range where one code is left to them (1 bit with non-finite values); the factor 2^-64
// rounds into subnormals (2^-149 more).
// Returns the number of special blocks.
size_t check_error_bound(const QuantParams& p, const test::Buffer& in, uint64_t seed) {
  const size_t count = in.count();
  const auto payload = fast_encode(p, in.view(), seed);
  test::Buffer out(in.dtype(), count);
  fast_decode(p, payload, out.view());
  const std::vector<float> x = in.to_floats(), y = out.to_floats();
  const size_t blocks = (count + p.block - 1) / p.block;
  for (size_t b = 0; b < blocks; ++b) {
    const BlockHeader h = header_of(payload, b);
    const size_t begin = b * p.block, end = std::min(count, begin + p.block);
    double max_abs = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = begin; i < end; ++i) {
      if (!std::isfinite(x[i])) continue;
      max_abs = std::max(max_abs, std::fabs(double(x[i])));
      lo = std::min(lo, double(x[i]));
      hi = std::max(hi, double(x[i]));
    }
    const bool one_code = h.holds_non_finite() && p.bits == 1;
    const double step_bound = one_code ? (hi - lo) / 2 : (p.stochastic ? 1.0 : 0.5) * h.scale();
    const double bound = step_bound + 12 * kUlp * max_abs + (h.special() ? 0x1p-149 : 0.0);
    for (size_t i = begin; i < end; ++i) {
      if (!std::isfinite(x[i])) {
        EXPECT_TRUE(h.special()) << "element " << i;
        const uint32_t kind = h.non_finite_kind();
        const float expected = kind == 1 ? INFINITY : kind == 2 ? -INFINITY : NAN;
        EXPECT_TRUE(std::isnan(expected) ? std::isnan(y[i]) : y[i] == expected)
            << spec_of(p) << " element " << i << ": " << x[i] << " decoded as " << y[i];
        if (kind != 0) {
          EXPECT_EQ(x[i], y[i]) << "a block's only infinity is kept, element " << i;
        }
        continue;
      }
      double allowed = bound;
      if (in.dtype() == DType::kBF16) allowed += std::fabs(double(y[i])) * 0x1p-8;
      if (in.dtype() == DType::kF16)
        allowed += std::max(std::fabs(double(y[i])) * 0x1p-11, 0x1p-25);
      if (!(std::fabs(double(x[i]) - double(y[i])) <= allowed)) {
        ADD_FAILURE() << spec_of(p) << " " << dtype_name(in.dtype()) << " element " << i << ": "
                      << x[i] << " decoded as " << y[i] << ", block scale " << h.scale()
                      << (h.special() ? " (special)" : "");
        return 0;
      }
    }
  }
  return special_blocks(payload, blocks);
}

TEST(QuantCodec, ErrorStaysWithinTheDeclaredBound) {
  const size_t count = 4097;
  for (DataKind kind : {DataKind::kGaussian, DataKind::kLaplace, DataKind::kSmooth}) {
    // Huge, tiny and denormal magnitudes; the denormal blocks would have a subnormal scale and
    // are special blocks (quantized at 2^64), the others regular.
    for (float magnitude : {1.0f, 1e30f, 1e-30f, 1e-40f}) {
      std::vector<float> v = make_data(kind, count, 3);
      for (float& e : v) e *= magnitude;
      const test::Buffer in = test::Buffer::from_floats(DType::kF32, v);
      for (int bits : {1, 2, 3, 4, 5, 8}) {
        for (bool stochastic : {false, true}) {
          const QuantParams p{bits, 64, stochastic};
          const size_t special = check_error_bound(p, in, 9);
          // Every full block of the denormal data; the last block holds one value, a constant.
          EXPECT_EQ(special, magnitude == 1e-40f ? count / 64 : 0) << spec_of(p);
        }
      }
    }
  }
}

TEST(QuantCodec, SixteenBitInputsStayWithinTheBound) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const test::Buffer in =
        test::Buffer::from_floats(dtype, make_data(DataKind::kGaussian, 4097, 4));
    for (int bits : {2, 4, 8}) {
      for (bool stochastic : {false, true}) {
        EXPECT_EQ(check_error_bound({bits, 32, stochastic}, in, 1), 0u);
      }
    }
  }
}

TEST(QuantCodec, ConstantBlocksDecodeExactly) {
  for (float c : {0.0f, 1.0f, -3.5f, 1e30f, -2.5e38f, 1e-30f, 1e-40f, 65504.0f}) {
    for (DType dtype : kDTypes) {
      const test::Buffer in = test::Buffer::from_floats(dtype, std::vector<float>(200, c));
      const std::vector<float> x = in.to_floats();
      for (int bits = 1; bits <= 8; ++bits) {
        for (bool stochastic : {false, true}) {
          const QuantParams p{bits, 64, stochastic};
          const auto payload = fast_encode(p, in.view(), 3);
          // Only values that overflow the dtype (1e30 in f16: infinities) are special blocks.
          EXPECT_EQ(special_blocks(payload, 4), std::isfinite(x[0]) ? 0u : 4u) << c;
          test::Buffer out(dtype, in.count());
          fast_decode(p, payload, out.view());
          EXPECT_TRUE(out.bits_equal(in)) << spec_of(p) << " " << dtype_name(dtype) << " " << c;
        }
      }
    }
  }
}

TEST(QuantCodec, NegativeZeroBlocksDecodeAsZero) {
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, std::vector<float>(64, -0.0f));
  test::Buffer out(DType::kF32, 64);
  fast_decode({4, 64, false}, fast_encode({4, 64, false}, in.view(), 0), out.view());
  for (float v : out.to_floats()) EXPECT_EQ(v, 0.0f);  // +0: the header keeps no sign of zero
}

// E[x'] = x: over N seeds, code - t of one element is -f or 1 - f (f the fraction of t) with
// P(1 - f) = f up to the 2^-24 resolution of the noise, so its mean is 0 and its variance
// f(1 - f) <= 1/4. The mean over N seeds has a standard deviation <= 1 / (2 sqrt(N)) in units
// of the block's scale, and over all N * count samples <= 1 / (2 sqrt(N * count)). The test
// allows 6 and 5 standard deviations, plus 1e-5 for float rounding (|t - exact| <= 3u * 3 and
// decoding rounds by u * |x'| / scale, both below 1e-5 for these blocks). Nearest rounding,
// with the same data, has a per-element mean error of up to 1/2, far outside these bounds.
TEST(QuantCodec, StochasticRoundingIsUnbiased) {
  const size_t count = 4096, seeds = 256;
  const QuantParams p{2, 64, true};
  const test::Buffer in =
      test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, count, 21));
  const std::vector<float> x = in.to_floats();
  const auto first = fast_encode(p, in.view(), 0);
  std::vector<double> sum(count, 0.0);
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    const auto payload = fast_encode(p, in.view(), seed * 7919 + 1);
    // Headers do not depend on the seed.
    ASSERT_TRUE(std::equal(payload.begin(), payload.begin() + 8 * (count / 64), first.begin()));
    test::Buffer out(DType::kF32, count);
    fast_decode(p, payload, out.view());
    const std::vector<float> y = out.to_floats();
    for (size_t i = 0; i < count; ++i) {
      sum[i] += (double(y[i]) - double(x[i])) / header_of(payload, i / 64).scale();
    }
  }
  double total = 0, worst = 0;
  for (size_t i = 0; i < count; ++i) {
    total += sum[i];
    worst = std::max(worst, std::fabs(sum[i] / seeds));
  }
  const double n = static_cast<double>(seeds);
  EXPECT_LE(std::fabs(total / (n * count)), 5 * 0.5 / std::sqrt(n * count) + 1e-5);
  EXPECT_LE(worst, 6 * 0.5 / std::sqrt(n) + 1e-5);
}

TEST(QuantCodec, StochasticRoundingIsDeterministicPerSeed) {
  const test::Buffer in =
      test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, 1000, 2));
  const QuantParams stochastic{4, 64, true}, nearest{4, 64, false};
  EXPECT_EQ(fast_encode(stochastic, in.view(), 5), fast_encode(stochastic, in.view(), 5));
  EXPECT_NE(fast_encode(stochastic, in.view(), 5), fast_encode(stochastic, in.view(), 6));
  EXPECT_EQ(fast_encode(nearest, in.view(), 5), fast_encode(nearest, in.view(), 6));
}

// The noise of an element depends on (seed, index) only: changing one block leaves the header
// and codes of every other block as they were.
TEST(QuantCodec, BlocksAreEncodedIndependently) {
  const size_t count = 640, block = 64;
  for (bool stochastic : {false, true}) {
    const QuantParams p{3, block, stochastic};
    std::vector<float> v = make_data(DataKind::kGaussian, count, 8);
    const auto before = fast_encode(p, test::Buffer::from_floats(DType::kF32, v).view(), 4);
    for (size_t i = 2 * block; i < 3 * block; ++i) v[i] = v[i] * 3 + 1;
    const auto after = fast_encode(p, test::Buffer::from_floats(DType::kF32, v).view(), 4);
    const size_t codes_at = 8 * count / block, code_bytes = block * 3 / 8;
    for (size_t b = 0; b < count / block; ++b) {
      const auto same = [&](size_t at, size_t n) {
        return std::equal(before.begin() + at, before.begin() + at + n, after.begin() + at);
      };
      EXPECT_EQ(same(8 * b, 8) && same(codes_at + b * code_bytes, code_bytes), b != 2) << b;
    }
  }
}

TEST(QuantCodec, SpecialBlocksKeepNonFiniteValuesAndBoundTheRest) {
  std::vector<float> v = make_data(DataKind::kGaussian, 64 * 8 + 5, 6);
  v[3] = std::bit_cast<float>(0x7fc00001u);  // NaN payloads, one of them signaling
  v[70] = INFINITY;                          // block 1: one kind, kept exactly
  v[75] = INFINITY;
  v[140] = -INFINITY;  // block 2: -inf and NaN, both NaN
  v[141] = NAN;
  v[200] = std::bit_cast<float>(0xffc12345u);
  v[201] = std::bit_cast<float>(0x7f800001u);
  v[64 * 4] = -3e38f;  // block 4: the range overflows
  v[64 * 4 + 1] = 3e38f;
  v[64 * 5] = FLT_MAX;  // block 5: infinity and a range that overflows
  v[64 * 5 + 1] = -FLT_MAX;
  v[64 * 5 + 2] = -INFINITY;
  v[64 * 8 + 2] = NAN;  // the partial last block
  for (DType dtype : kDTypes) {
    // f16 has no room for 3e38: the values become infinities.
    const test::Buffer in = test::Buffer::from_floats(dtype, v);
    for (int bits : {1, 2, 5, 8}) {
      for (bool stochastic : {false, true}) {
        const QuantParams p{bits, 64, stochastic};
        EXPECT_EQ(check_error_bound(p, in, 1), 7u) << dtype_name(dtype) << " " << spec_of(p);
        test::Buffer out(dtype, in.count());
        fast_decode(p, fast_encode(p, in.view(), 1), out.view());
        const std::vector<float> x = in.to_floats(), y = out.to_floats();
        EXPECT_EQ(y[70], INFINITY);
        // FLT_MAX is +inf in bf16 and f16: block 5 then mixes infinities, which decode as NaN.
        if (dtype == DType::kF32) {
          EXPECT_EQ(y[64 * 5 + 2], -INFINITY);
        } else {
          EXPECT_TRUE(std::isnan(y[64 * 5 + 2]));
        }
        EXPECT_TRUE(std::isnan(y[140]) && std::isnan(y[141]) && std::isnan(y[64 * 8 + 2]));
        for (size_t i : {64 * 4, 64 * 4 + 1, 64 * 5, 64 * 5 + 1}) {
          EXPECT_EQ(std::isfinite(x[i]), std::isfinite(y[i])) << spec_of(p) << " " << i;
        }
      }
    }
  }
}

// A finite range whose largest decoded value min + (2^bits - 1) * scale rounds past FLT_MAX
// (bits=5 here) is a special block (quantized at a quarter); with bits=8 the same block rounds
// below and is regular.
TEST(QuantCodec, BlocksWhoseTopDecodedValueOverflowsAreSpecial) {
  std::vector<float> v(64, 0.0f);
  v[7] = FLT_MAX;
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, v);
  EXPECT_EQ(special_blocks(fast_encode({5, 64, false}, in.view(), 0), 1), 1u);
  EXPECT_EQ(special_blocks(fast_encode({8, 64, false}, in.view(), 0), 1), 0u);
  for (int bits : {5, 8}) {
    EXPECT_EQ(check_error_bound({bits, 64, false}, in, 0), bits == 5 ? 1u : 0u);
    test::Buffer out(DType::kF32, 64);
    fast_decode({bits, 64, false}, fast_encode({bits, 64, false}, in.view(), 0), out.view());
    for (float y : out.to_floats()) EXPECT_TRUE(std::isfinite(y)) << bits;
  }
}

// The size never depends on the data: a tensor of NaN takes the regular size.
TEST(QuantCodec, NonFinitePayloadHasTheRegularSize) {
  for (DType dtype : kDTypes) {
    const test::Buffer in = test::Buffer::from_floats(dtype, std::vector<float>(1000, NAN));
    for (int bits : {1, 5, 8}) {
      const QuantParams p{bits, 64, false};
      const auto payload = fast_encode(p, in.view(), 0);
      const CodecConfig config = CodecConfig::parse(spec_of(p));
      const Codec& c = config.codec();
      EXPECT_EQ(payload.size(), c.max_payload_bytes(dtype, 1000));
      EXPECT_EQ(payload.size(), c.regular_payload_bytes(dtype, 1000));
      test::Buffer out(dtype, 1000);
      fast_decode(p, payload, out.view());
      for (float y : out.to_floats()) EXPECT_TRUE(std::isnan(y));
    }
  }
}

TEST(QuantCodec, PayloadSizes) {
  const CodecConfig config = CodecConfig::parse("quant:bits=4,block=64");
  const Codec& c = config.codec();
  // 65 headers of 8 bytes and 4104 padded codes of 4 bits, whatever the data.
  EXPECT_EQ(c.max_payload_bytes(DType::kF32, 4097), 65 * 8 + 2052u);
  EXPECT_EQ(c.max_payload_bytes(DType::kBF16, 4097), 65 * 8 + 2052u);
  EXPECT_EQ(c.max_payload_bytes(DType::kF32, 0), 0u);
  const test::Buffer in =
      test::Buffer::from_floats(DType::kF32, make_data(DataKind::kGaussian, 4097));
  EXPECT_EQ(fast_encode({4, 64, false}, in.view(), 0).size(), 65 * 8 + 2052u);
  // 8 bits per value plus 64 bits of min and scale per 64 values: 9 bits per value.
  EXPECT_EQ(fast_encode({8, 64, false}, test::Buffer(DType::kF32, 6400).view(), 0).size(),
            6400 * 9 / 8u);
}

class QuantCorruption : public ::testing::Test {
 protected:
  // Blocks 0, 1, 3 regular; 2 and 4 special.
  void SetUp() override {
    std::vector<float> v = make_data(DataKind::kGaussian, 300, 12);
    v[130] = NAN;
    v[260] = INFINITY;
    in_ = test::Buffer::from_floats(DType::kF32, v);
    payload_ = fast_encode(p_, in_.view(), 0);
    ASSERT_TRUE(header_of(payload_, 2).special() && header_of(payload_, 4).special());
    ASSERT_EQ(special_blocks(payload_, 5), 2u);
  }
  void expect_rejected(const std::vector<std::byte>& bad, const std::string& what) {
    test::Buffer out(DType::kF32, 300);
    EXPECT_THROW(fast_decode(p_, bad, out.view()), CorruptStream) << what;
    EXPECT_THROW(codec::reference::quant_decode(p_, bad, out.view()), CorruptStream) << what;
  }
  std::vector<std::byte> with_header(size_t b, uint32_t min_bits, uint32_t scale_bits) {
    auto bad = payload_;
    set_header(bad, b, min_bits, scale_bits);
    return bad;
  }

  const QuantParams p_{5, 64, false};
  test::Buffer in_{DType::kF32, 0};
  std::vector<std::byte> payload_;
};

TEST_F(QuantCorruption, DecodesTheIntactPayload) {
  test::Buffer out(DType::kF32, 300);
  fast_decode(p_, payload_, out.view());
  EXPECT_TRUE(std::isnan(out.to_floats()[130]));
}

TEST_F(QuantCorruption, RejectsInvalidSpecialHeaders) {
  const uint32_t min2 = header_of(payload_, 2).min_bits;
  const uint32_t scale2 = header_of(payload_, 2).scale_bits;  // NaN: flags 1
  ASSERT_EQ(scale2 & 0xffu, 1u);
  const uint32_t step1 = 0x3f800000u;  // 1.0
  expect_rejected(with_header(2, 0, 0xffffffffu), "raw block of the older format");
  expect_rejected(with_header(0, 0, 0xffffffffu), "regular block marked raw");
  for (uint32_t flags : {0x20u, 0x41u, 0x80u, 0x07u, 0x02u, 0x04u, 0x18u, 0x19u}) {
    expect_rejected(with_header(2, min2, (scale2 & ~0xffu) | flags),
                    "flags " + std::to_string(flags));
  }
  expect_rejected(with_header(2, min2, 0x80000000u | 0x00000100u | 1u), "subnormal step");
  expect_rejected(with_header(2, min2, 0x80000000u | 0x7f800000u | 1u), "infinite step");
  expect_rejected(with_header(2, 0x7fc00000u, scale2), "NaN min");
  expect_rejected(with_header(2, std::bit_cast<uint32_t>(FLT_MAX), 0x80000000u | 0x7e800000u | 1u),
                  "top overflows");
  // A well-formed special header on any block decodes (the format cannot tell).
  const auto relabeled = with_header(0, 0, 0x80000000u | step1);
  test::Buffer fast(DType::kF32, 300), ref(DType::kF32, 300);
  fast_decode(p_, relabeled, fast.view());
  codec::reference::quant_decode(p_, relabeled, ref.view());
  EXPECT_TRUE(fast.bits_equal(ref));
  for (size_t i = 0; i < 64; ++i) {
    const float code = fast.to_floats()[i];  // min 0 and step 1: the code itself
    EXPECT_TRUE(code >= 0 && code <= 31 && code == std::floor(code)) << i << " " << code;
  }
}

TEST_F(QuantCorruption, RejectsInvalidBlockHeaders) {
  const uint32_t min0 = header_of(payload_, 0).min_bits;
  const uint32_t scale0 = header_of(payload_, 0).scale_bits;
  // (a negative scale sets the special bit: special_blocks' headers, tested above)
  for (float scale : {INFINITY, NAN, 1e-40f, 1e38f}) {
    expect_rejected(with_header(0, min0, std::bit_cast<uint32_t>(scale)),
                    "scale " + std::to_string(scale));
  }
  expect_rejected(with_header(0, 0x7fc00000u, scale0), "NaN min");
  expect_rejected(with_header(0, std::bit_cast<uint32_t>(-INFINITY), scale0), "infinite min");
  expect_rejected(
      with_header(0, std::bit_cast<uint32_t>(FLT_MAX / 2), std::bit_cast<uint32_t>(1e37f)),
      "top overflows");
}

TEST_F(QuantCorruption, RejectsWrongPayloadSizes) {
  for (size_t size : {size_t{0}, size_t{39}, payload_.size() - 1, payload_.size() + 1}) {
    auto bad = payload_;
    bad.resize(size);
    expect_rejected(bad, "size " + std::to_string(size));
  }
}

TEST(QuantSpec, CanonicalSpecsListEveryParameter) {
  EXPECT_EQ(CodecConfig::parse("quant").spec(), "quant:bits=8,block=64,round=nearest");
  EXPECT_EQ(CodecConfig::parse("quant:bits=4").spec(), "quant:bits=4,block=64,round=nearest");
  EXPECT_EQ(CodecConfig::parse("quant:round=stochastic,block=65536,bits=1").spec(),
            "quant:bits=1,block=65536,round=stochastic");
  EXPECT_EQ(CodecConfig::parse("quant:block=8").spec(), "quant:bits=8,block=8,round=nearest");
  EXPECT_FALSE(CodecConfig::parse("quant").lossless());
}

TEST(QuantSpec, RejectsBlocksThatAreNotAMultipleOfEight) {
  for (const char* spec :
       {"quant:block=12", "quant:block=4", "quant:block=65544", "quant:block=x"}) {
    const std::string what = test::spec_error(spec);
    ASSERT_FALSE(what.empty()) << spec << " was accepted";
    EXPECT_NE(what.find(spec), std::string::npos) << what;
    EXPECT_NE(what.find("block"), std::string::npos) << what;
  }
}

TEST(QuantSpec, ParamsRoundTripAndAreValidated) {
  const codec::CodecEntry& entry = codec::quant_entry();
  for (const char* spec : {"quant:bits=1,block=8,round=stochastic", "quant:bits=8,block=65536",
                           "quant:bits=5,block=24", "quant:bits=8,block=256,rotate=hadamard"}) {
    const CodecConfig c = CodecConfig::parse(spec);
    EXPECT_EQ(entry.from_params(c.codec().params())->spec(), c.spec());
  }
  const CodecParams good = CodecConfig::parse("quant:bits=4,block=64").codec().params();
  const auto with_byte = [&](size_t at, uint8_t v) {
    CodecParams p = good;
    p.bytes[at] = v;
    return p;
  };
  for (const CodecParams& bad :
       {with_byte(0, 0), with_byte(0, 9), with_byte(1, 2), with_byte(4, 12), with_byte(4, 0),
        with_byte(6, 1), with_byte(2, 2), with_byte(3, 1), with_byte(15, 1)}) {
    EXPECT_THROW(entry.from_params(bad), CorruptStream);
  }
}

TEST(QuantReference, NoiseIsUniformIn01WithTwentyFourBits) {
  double sum = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float u = codec::reference::quant_noise(42, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(u * 16777216.0f, std::floor(u * 16777216.0f));
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 5 * std::sqrt(1.0 / 12 / 100000));
}

}  // namespace
}  // namespace hycc
