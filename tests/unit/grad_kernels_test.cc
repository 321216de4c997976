// The building blocks of the gradient compressors against their references: top-k selection,
// index packing, PowerSGD's products and orthogonalization, the sign compressor's chunk coding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/synthetic_data.h"
#include "grad/low_rank.h"
#include "grad/sign_block.h"
#include "grad/sign_codec.h"
#include "grad/topk_select.h"

namespace hycc::grad {
namespace {

std::vector<float> gaussian(size_t n, uint64_t seed) {
  return make_data(DataKind::kGaussian, n, seed);
}

TEST(GradTopK, SelectionMatchesReference) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}, size_t{4099}}) {
    std::vector<float> x = gaussian(n, n + 1);
    // Ties and specials: repeated magnitudes of both signs, zeros of both signs, NaN, infinity.
    for (size_t i = 0; i < n; i += 5) x[i] = (i % 2 ? -0.5f : 0.5f);
    if (n > 10) {
      x[3] = -0.0f;
      x[4] = 0.0f;
      x[6] = std::nanf("");
      x[8] = -INFINITY;
    }
    for (const size_t k : {size_t{0}, size_t{1}, n / 3, n / 2, n}) {
      const std::vector<uint64_t> fast = select_topk(x, k);
      EXPECT_EQ(fast, select_topk_reference(x, k)) << "n " << n << " k " << k;
      EXPECT_EQ(fast.size(), std::min(k, n));
    }
  }
}

TEST(GradTopK, SelectsTheLargestMagnitudes) {
  const std::vector<float> x = {0.1f, -3.0f, 2.0f, -2.0f, 0.5f, 3.0f};
  EXPECT_EQ(select_topk(x, 2), (std::vector<uint64_t>{1, 5}));
  EXPECT_EQ(select_topk(x, 3), (std::vector<uint64_t>{1, 2, 5}));  // tie: lower index first
  EXPECT_EQ(select_topk(x, 4), (std::vector<uint64_t>{1, 2, 3, 5}));
}

TEST(GradTopK, IndexPackingMatchesReference) {
  EXPECT_EQ(index_bits(1), 1);
  EXPECT_EQ(index_bits(2), 1);
  EXPECT_EQ(index_bits(3), 2);
  EXPECT_EQ(index_bits(1024), 10);
  EXPECT_EQ(index_bits(1025), 11);
  EXPECT_EQ(index_bits(size_t{1} << 40), 40);
  for (const int bits : {1, 5, 13, 31, 32, 33, 40}) {
    for (const size_t k : {size_t{0}, size_t{1}, size_t{3}, size_t{64}, size_t{1001}}) {
      std::vector<uint64_t> idx(k);
      for (size_t i = 0; i < k; ++i) idx[i] = splitmix64(i * 977 + uint64_t(bits)) >> (64 - bits);
      std::vector<uint32_t> fast(packed_words(k, bits)), ref(fast.size());
      pack_indices(idx, bits, fast);
      pack_indices_reference(idx, bits, ref);
      EXPECT_EQ(fast, ref) << "bits " << bits << " k " << k;
      std::vector<uint64_t> back(k), back_ref(k);
      unpack_indices(fast, bits, back);
      unpack_indices_reference(fast, bits, back_ref);
      EXPECT_EQ(back, idx) << "bits " << bits << " k " << k;
      EXPECT_EQ(back_ref, idx) << "bits " << bits << " k " << k;
    }
  }
}

// Max |a - b| relative to max |b|.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    m = std::max(m, std::fabs(double(b[i])));
  }
  return m > 0 ? d / m : d;
}

// Products: float32 with 8 partial sums against double accumulation. For inner length L the
// float32 error is at most about (L / 8 + 3) u relative to sum |terms| (<= max |result| x a small
// factor on this data); 1e-5 is well above that for L <= 300 and far below any indexing error.
TEST(GradLowRank, ProductsMatchReference) {
  for (const auto& [rows, cols, r] : {std::tuple{1, 1, 1}, {7, 13, 3}, {64, 300, 4}, {300, 9, 8}}) {
    const std::vector<float> m = gaussian(size_t(rows * cols), 1);
    const std::vector<float> qt = gaussian(size_t(r * cols), 2);
    const std::vector<float> p = gaussian(size_t(rows * r), 3);
    std::vector<float> fast(size_t(rows * r)), ref(fast.size());
    multiply_mq(m, rows, cols, qt, r, fast);
    multiply_mq_reference(m, rows, cols, qt, r, ref);
    EXPECT_LT(rel_diff(fast, ref), 1e-5) << rows << "x" << cols << " r " << r;
    fast.assign(size_t(r * cols), 0);
    ref = fast;
    multiply_mtp(m, rows, cols, p, r, fast);
    multiply_mtp_reference(m, rows, cols, p, r, ref);
    EXPECT_LT(rel_diff(fast, ref), 1e-5) << rows << "x" << cols << " r " << r;
    fast.assign(size_t(rows * cols), 0);
    ref = fast;
    multiply_pqt(p, qt, rows, cols, r, fast);
    multiply_pqt_reference(p, qt, rows, cols, r, ref);
    EXPECT_LT(rel_diff(fast, ref), 1e-5) << rows << "x" << cols << " r " << r;
  }
}

// Gram-Schmidt of well-conditioned random columns is unique (QR with a positive diagonal), so
// CGS2 and MGS agree to a few float32 ulps; both give orthonormal columns.
TEST(GradLowRank, OrthogonalizeMatchesReference) {
  for (const auto& [rows, r] : {std::pair{1, 1}, {5, 3}, {64, 4}, {1000, 8}}) {
    std::vector<float> fast = gaussian(size_t(rows * r), 9), ref = fast;
    orthogonalize(fast, rows, r);
    orthogonalize_reference(ref, rows, r);
    EXPECT_LT(rel_diff(fast, ref), 1e-5) << rows << " x " << r;
    for (int a = 0; a < r; ++a) {
      for (int b = 0; b < r; ++b) {
        double d = 0;
        for (int i = 0; i < rows; ++i)
          d += double(fast[size_t(i * r + a)]) * fast[size_t(i * r + b)];
        EXPECT_NEAR(d, a == b ? 1.0 : 0.0, 1e-5)
            << rows << " x " << r << " (" << a << "," << b << ")";
      }
    }
  }
}

// Rank-deficient P (a zero gradient, or fewer directions than r): zero and dependent columns
// become 0 (no NaN, no unit vector made of rounding errors).
TEST(GradLowRank, RankDeficientInput) {
  std::vector<float> zero(12, 0.0f);
  orthogonalize(zero, 4, 3);
  for (const float v : zero) EXPECT_EQ(v, 0.0f);
  for (const bool reference : {false, true}) {
    std::vector<float> p = {1, 2, 2, 4, 0, 0, 4, 8};  // rows 4, r 2: column 1 = 2 x column 0
    reference ? orthogonalize_reference(p, 4, 2) : orthogonalize(p, 4, 2);
    const double q[4] = {1, 2, 0, 4};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_FLOAT_EQ(p[2 * i], float(q[i] / std::sqrt(21.0))) << reference;
      EXPECT_EQ(p[2 * i + 1], 0.0f) << reference;
    }
  }
}

TEST(GradLowRank, NormalValuesAreReproducible) {
  std::vector<float> a(1001), b(1001), c(1001);
  fill_normal(a, 5);
  fill_normal(b, 5);
  fill_normal(c, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0, var = 0;
  for (const float v : a) mean += v;
  mean /= double(a.size());
  for (const float v : a) var += (v - mean) * (v - mean);
  var /= double(a.size());
  // 1001 samples: the standard error of the mean is 0.032, of the variance about 0.045.
  EXPECT_NEAR(mean, 0.0, 0.15);
  EXPECT_NEAR(var, 1.0, 0.2);
}

// The sum of |x| of a sign chunk: the fast host loop (rows of kLanes values) is the lane-by-lane
// definition (the device's) bit for bit, and within double rounding of a plain sequential sum;
// partial tiles and rows included.
TEST(GradSign, AbsSumMatchesReference) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{8191},
                         size_t{8192}, size_t{8193}, 3 * sign::kTile + 1000}) {
    const std::vector<float> x = gaussian(n, n + 3);
    const double fast = sign_abs_sum(x), ref = sign_abs_sum_reference(x);
    EXPECT_EQ(std::memcmp(&fast, &ref, sizeof fast), 0) << "n " << n;
    double plain = 0;
    for (const float v : x) plain += std::fabs(double(v));
    EXPECT_NEAR(fast, plain, 1e-12 * plain) << "n " << n;
  }
}

// Encoding: the scale is the mean |x|, bit b of word w is x[32 w + b] >= 0 (NaN 0, -0 1), the
// words past the bits are 0; decoding gives +-scale.
TEST(GradSign, ChunkCodingFollowsTheFormat) {
  const float specials[] = {NAN, -0.0f, 0.0f, -INFINITY, INFINITY};
  EXPECT_EQ(sign::sign_word(specials, 5, 0), 0b10110u);
  for (const size_t n : {size_t{0}, size_t{5}, size_t{32}, size_t{77}}) {
    std::vector<float> x = gaussian(n, 9);
    if (n > 3) {
      x[0] = -0.0f;
      x[1] = -1e30f;
      x[2] = 0.0f;
    }
    std::vector<uint32_t> words(sign::chunk_words(n) + 2, 0xdeadbeef);
    encode_sign(x, words);
    float scale = 0;
    std::memcpy(&scale, &words[0], sizeof scale);
    EXPECT_EQ(scale, sign::scale_of(sign_abs_sum(x), n));
    std::vector<float> back(n);
    decode_sign(words, back);
    for (size_t i = 0; i < n; ++i) {
      const bool bit = (words[1 + i / 32] >> (i % 32)) & 1u;
      EXPECT_EQ(bit, x[i] >= 0) << "n " << n << " i " << i;
      EXPECT_EQ(back[i], bit ? scale : -scale) << "n " << n << " i " << i;
    }
    if (n % 32 != 0) {
      EXPECT_EQ(words[1 + n / 32] >> (n % 32), 0u) << "n " << n << ": bits past x";
    }
    for (size_t w = (n + 31) / 32; 1 + w < words.size(); ++w) {
      EXPECT_EQ(words[1 + w], 0u) << "n " << n << " word " << w;
    }
  }
}

}  // namespace
}  // namespace hycc::grad
