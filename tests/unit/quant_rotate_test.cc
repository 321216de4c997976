// Codec "quant" with rotate=hadamard: the rotation itself (self-inverse, orthogonal up to its
// scale), the declared root-mean-square bound per block, what it buys on blocks with outliers,
// the blocks it leaves alone (a short last block, huge magnitudes) and its spec. The fast path
// against the reference, bit for bit, is in quant_test.cc's sweep.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "codec/block/hadamard.h"
#include "codec/registry.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "quant_test_util.h"

namespace hycc {
namespace {

using codec::reference::QuantParams;
using test::fast_decode;
using test::fast_encode;
using test::header_of;
using test::spec_of;

TEST(Hadamard, InverseUndoesForwardAndKeepsTheNormUpToItsScale) {
  for (size_t n : {size_t{8}, size_t{64}, size_t{128}, size_t{4096}}) {
    const std::vector<float> x = make_data(DataKind::kGaussian, n, 5);
    std::vector<float> y = x;
    codec::quant::hadamard_forward(y.data(), n);
    double norm_x = 0, norm_y = 0;
    for (size_t i = 0; i < n; ++i) {
      norm_x += double(x[i]) * x[i];
      norm_y += double(y[i]) * y[i];
    }
    // y = H x 2^-floor(L/2) and H / sqrt(n) is orthogonal: |y| = |x| 2^(L/2 - floor(L/2)).
    const int l = codec::quant::log2_of(n);
    EXPECT_NEAR(std::sqrt(norm_y / norm_x), std::exp2(l / 2.0 - l / 2), 1e-5) << n;
    codec::quant::hadamard_inverse(y.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], 1e-5 * (1 + std::fabs(x[i]))) << n;
  }
  // One spike spreads evenly over the block.
  std::vector<float> spike(64, 0.0f);
  spike[5] = 64.0f;
  codec::quant::hadamard_forward(spike.data(), 64);
  for (float v : spike) EXPECT_EQ(std::fabs(v), 8.0f);
}

// The declared bound of a rotated block: root-mean-square error at most
// 2^(floor(L/2) - L/2) scale / 2 (nearest) or that times 2 (stochastic), plus float rounding.
TEST(QuantRotate, BlockErrorStaysWithinTheDeclaredRmsBound) {
  const size_t count = 64 * 40;
  for (DataKind kind : {DataKind::kGaussian, DataKind::kLaplace, DataKind::kSmooth}) {
    const test::Buffer in = test::Buffer::from_floats(DType::kF32, make_data(kind, count, 8));
    for (size_t block : {size_t{64}, size_t{128}}) {
      for (int bits : {2, 4, 8}) {
        for (bool stochastic : {false, true}) {
          const QuantParams p{bits, block, stochastic, true};
          const auto payload = fast_encode(p, in.view(), 3);
          test::Buffer out(DType::kF32, count);
          fast_decode(p, payload, out.view());
          const std::vector<float> x = in.to_floats(), y = out.to_floats();
          const int l = codec::quant::log2_of(block);
          for (size_t b = 0; b < count / block; ++b) {
            const test::BlockHeader h = header_of(payload, b);
            ASSERT_FALSE(h.special());
            double sum = 0, max_abs = 0;
            for (size_t i = b * block; i < (b + 1) * block; ++i) {
              sum += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
              max_abs = std::max(max_abs, std::fabs(double(x[i])));
            }
            const double bound = std::exp2(l / 2 - l / 2.0) * h.scale() * (stochastic ? 1.0 : 0.5) +
                                 64 * test::kUlp * max_abs;
            EXPECT_LE(std::sqrt(sum / double(block)), bound) << spec_of(p) << " block " << b;
          }
        }
      }
    }
  }
}

// Activations with a few large outliers: the rotation keeps the step of a block near its typical
// magnitude, so the error falls well below the plain quantizer's.
TEST(QuantRotate, OutliersCostLessThanWithoutRotation) {
  const size_t count = 64 * 512;
  std::vector<float> v = make_data(DataKind::kGaussian, count, 21);
  for (size_t i = 17; i < count; i += 61) v[i] *= 40.0f;  // about one outlier per block
  const test::Buffer in = test::Buffer::from_floats(DType::kBF16, v);
  const std::vector<float> x = in.to_floats();
  for (int bits : {4, 8}) {
    double error[2];
    for (int rotate = 0; rotate < 2; ++rotate) {
      const QuantParams p{bits, 64, false, rotate == 1};
      test::Buffer out(DType::kBF16, count);
      fast_decode(p, fast_encode(p, in.view(), 1), out.view());
      error[rotate] = test::rel_l2_error(x, out.to_floats());
    }
    EXPECT_LT(error[1], 0.5 * error[0]) << bits << " bits: " << error[1] << " vs " << error[0];
  }
}

TEST(QuantRotate, ShortLastBlockAndHugeMagnitudesAreNotRotated) {
  // 64 + 10 values: the short block is quantized as it is, so its error obeys the plain bound.
  std::vector<float> v = make_data(DataKind::kGaussian, 74, 2);
  v[3] = 1e31f;  // above 2^100: the first block is special, not rotated
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, v);
  const QuantParams p{8, 64, false, true};
  const auto payload = fast_encode(p, in.view(), 1);
  const test::BlockHeader first = header_of(payload, 0);
  EXPECT_TRUE(first.special());
  const test::BlockHeader last = header_of(payload, 1);
  ASSERT_FALSE(last.special());
  test::Buffer out(DType::kF32, 74);
  fast_decode(p, payload, out.view());
  const std::vector<float> y = out.to_floats();
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_LE(std::fabs(y[i] - v[i]), 0.5 * first.scale() + 1e31 * 12 * test::kUlp) << i;
  }
  for (size_t i = 64; i < 74; ++i) EXPECT_LE(std::fabs(y[i] - v[i]), 0.5 * last.scale() * 1.001);
}

TEST(QuantRotate, SpecNamesTheRotationAndNeedsAPowerOfTwo) {
  EXPECT_EQ(CodecConfig::parse("quant:rotate=hadamard,bits=4").spec(),
            "quant:bits=4,block=64,round=nearest,rotate=hadamard");
  EXPECT_EQ(CodecConfig::parse("quant:rotate=none").spec(), "quant:bits=8,block=64,round=nearest");
  const std::string what = test::spec_error("quant:block=24,rotate=hadamard");
  EXPECT_NE(what.find("power of two"), std::string::npos) << what;
  EXPECT_FALSE(test::spec_error("quant:rotate=fourier").empty());
  // A rotated stream's parameters with a block that is no power of two are corrupt.
  CodecParams p = CodecConfig::parse("quant:rotate=hadamard").codec().params();
  p.bytes[4] = 24;
  EXPECT_THROW(codec::quant_entry().from_params(p), CorruptStream);
}

}  // namespace
}  // namespace hycc
