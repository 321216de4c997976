// The bf16/fp16 conversions against an obvious reference built on double arithmetic, over every
// 16-bit pattern and a sweep of 32-bit patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codec/f16_array.h"
#include "codec/float_convert.h"

namespace hycc::codec {
namespace {

// Reference: decode a binary16 pattern by its definition.
double f16_value(uint16_t h) {
  const double sign = (h >> 15) ? -1.0 : 1.0;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0) return sign * std::ldexp(double(m), -24);
  if (e == 31) return m ? std::nan("") : sign * HUGE_VAL;
  return sign * std::ldexp(double(1024 + m), e - 25);
}

// Reference: round a double to the nearest binary16 by exhaustive search among neighbours.
uint16_t f16_round_reference(float f) {
  if (std::isnan(f)) return 0x7e00;
  const double x = f;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double ax = std::fabs(x);
  if (ax >= 65520.0) return sign | 0x7c00;
  // Binary search over the ordered positive patterns 0..0x7bff.
  uint16_t lo = 0, hi = 0x7bff;
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    (f16_value(mid) <= ax ? lo : hi) = mid;
  }
  if (f16_value(hi) <= ax) lo = hi;
  uint16_t best = lo;
  if (lo < 0x7bff || ax >= f16_value(0x7bff)) {
    const uint16_t up = static_cast<uint16_t>(lo + 1);
    const double dl = ax - f16_value(lo), du = f16_value(up) - ax;
    if (du < dl || (du == dl && (lo & 1))) best = up;
  }
  return sign | best;
}

TEST(FloatConvert, F16WidensEveryPatternExactly) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const double want = f16_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), want) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    }
    // Narrowing the widened value gives the pattern back (NaNs stay NaN).
    const uint16_t back = f32_to_f16(f);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f16_value(back)));
    } else {
      EXPECT_EQ(back, h);
    }
  }
}

TEST(FloatConvert, F16NarrowsLikeTheReference) {
  uint64_t state = 1;
  for (int i = 0; i < 2000000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t bits = static_cast<uint32_t>(state >> 32);
    if (i % 2) bits = (bits & 0x80000000u) | (0x33000000u + bits % 0x14800000u);  // f16 range
    const float f = bits_to_f32(bits);
    const uint16_t got = f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_value(got)));
      continue;
    }
    ASSERT_EQ(got, f16_round_reference(f)) << std::hexfloat << f;
  }
}

// The F16C array loops against the portable ones, bit for bit: every binary16 pattern widened, and
// binary32 patterns narrowed with every high half and low halves at and around the rounding
// boundaries of the dropped bits (normal and subnormal results); at every offset 0..7, so that
// the 8-wide blocks, the sNaN fallback and the tails all run. (All 2^32 binary32 patterns were
// compared once, by hand: equal, with and without MXCSR's FTZ and DAZ.)
TEST(FloatConvert, F16ArraysEqualThePortableLoops) {
  if (!f16c_available()) GTEST_SKIP() << "this CPU has no F16C: only the portable loops run";
  std::vector<uint16_t> halves(0x10000);
  for (uint32_t h = 0; h <= 0xffff; ++h) halves[h] = static_cast<uint16_t>(h);
  std::vector<float> wide_fast(halves.size()), wide_slow(halves.size());
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3fff,
                           0x4000, 0x7fff, 0x8000, 0xbfff, 0xc000, 0xffff, 0x5a5a, 0x9e37};
  std::vector<float> singles;
  for (uint32_t hi = 0; hi <= 0xffff; ++hi) {
    for (const uint32_t lo : lows) singles.push_back(bits_to_f32(hi << 16 | lo));
  }
  std::vector<uint16_t> narrow_fast(singles.size()), narrow_slow(singles.size());
  for (size_t offset = 0; offset < 8; ++offset) {
    const size_t n = halves.size() - offset;
    f16_to_f32_array_f16c(halves.data() + offset, wide_fast.data(), n);
    f16_to_f32_array_portable(halves.data() + offset, wide_slow.data(), n);
    ASSERT_EQ(std::memcmp(wide_fast.data(), wide_slow.data(), n * sizeof(float)), 0) << offset;
    const size_t m = singles.size() - offset;
    f32_to_f16_array_f16c(singles.data() + offset, narrow_fast.data(), m);
    f32_to_f16_array_portable(singles.data() + offset, narrow_slow.data(), m);
    ASSERT_EQ(std::memcmp(narrow_fast.data(), narrow_slow.data(), m * sizeof(uint16_t)), 0)
        << offset;
  }
  // The dispatching entry points take the F16C loops here.
  f16_to_f32_array(halves.data(), wide_fast.data(), halves.size());
  f16_to_f32_array_portable(halves.data(), wide_slow.data(), halves.size());
  EXPECT_EQ(std::memcmp(wide_fast.data(), wide_slow.data(), halves.size() * sizeof(float)), 0);
}

TEST(FloatConvert, BF16ArrayEqualsTheScalarConversion) {
  // Every class of input: random bit patterns, then NaNs (quiet, signaling, with payloads),
  // infinities, zeros, denormals and ties; lengths that leave every tail of a vector loop.
  std::vector<uint32_t> bits = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu,
                                0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x3f808000u,
                                0x3f818000u, 0x7f7fffffu, 0x3f80ffffu, 0xff7f8000u};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  for (const size_t n : {bits.size(), size_t{0}, size_t{1}, size_t{7}, size_t{15}, size_t{33}}) {
    std::vector<uint16_t> fast(n), slow(n);
    f32_bits_to_bf16_array(bits.data(), fast.data(), n);
    for (size_t i = 0; i < n; ++i) slow[i] = f32_bits_to_bf16(bits[i]);
    EXPECT_EQ(fast, slow) << n;
  }
}

TEST(FloatConvert, BF16RoundsToNearestEven) {
  uint64_t state = 3;
  for (int i = 0; i < 2000000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t bits = static_cast<uint32_t>(state >> 32);
    const float f = bits_to_f32(bits);
    const uint16_t got = f32_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_to_f32(got)));
      continue;
    }
    // Reference: the two bf16 neighbours by truncation, pick the nearer (ties to even).
    const uint32_t down = bits & 0xffff0000u;
    const uint32_t up = down + 0x10000u;
    const double dd = std::fabs(double(f) - double(bits_to_f32(down)));
    // Past the largest finite bf16 the next step is 2^128 (where rounding turns into infinity).
    const double up_value = std::isinf(bits_to_f32(up)) ? std::copysign(std::ldexp(1.0, 128), f)
                                                        : double(bits_to_f32(up));
    const double du = std::fabs(up_value - double(f));
    const uint32_t lower = down >> 16;
    const auto want =
        static_cast<uint16_t>((dd < du || (dd == du && (lower & 1) == 0)) ? lower : (up >> 16));
    ASSERT_EQ(got, want) << std::hexfloat << f;
  }
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(3.4028235e38f), 0x7f80);  // rounds up to infinity
}

}  // namespace
}  // namespace hycc::codec
