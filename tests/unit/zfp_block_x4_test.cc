// The CPU's four-blocks-at-once zfp steps (codec/zfp_block_x4.h) against the per-block functions
// of codec/block/zfp_block.h they stand for, bit for bit: block_integers on blocks of every
// exponent range (zeros, signed zeros, denormals, magnitudes below 2^-97 whose scale overflows,
// the largest floats, mixtures), block_floats on random integers at every exponent a stream can
// carry (denormal and zero scales included) and on the all-zero integers of an empty block.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "codec/block/zfp_block.h"
#include "codec/zfp_block_x4.h"

namespace hycc {
namespace {

namespace zfp = codec::zfp;

// A float of random sign and mantissa whose biased exponent is drawn from [lo, hi].
float random_float(std::mt19937_64& rng, uint32_t lo, uint32_t hi) {
  const uint32_t exponent = std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  const auto bits = static_cast<uint32_t>(rng());
  return std::bit_cast<float>((bits & 0x807fffffu) | exponent << 23);
}

// One value of a block: the kinds of value that take different paths through the steps.
float random_value(std::mt19937_64& rng, uint32_t kind) {
  switch (kind) {
    case 0:
      return 0.0f;
    case 1:
      return -0.0f;
    case 2:
      return random_float(rng, 0, 0);  // denormal (or zero)
    case 3:
      return random_float(rng, 1, 30);  // below 2^-97: the scale overflows
    case 4:
      return random_float(rng, 31, 40);  // near 2^-97
    case 5:
      return random_float(rng, 100, 150);  // ordinary
    case 6:
      return random_float(rng, 240, 254);  // the largest floats
    default:
      return random_float(rng, 0, 254);
  }
}

TEST(ZfpBlockX4, GroupIntegersEqualBlockIntegers) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200000; ++trial) {
    float x[16];
    // A group mixes blocks of one kind each with blocks of mixed kinds.
    for (uint32_t j = 0; j < 4; ++j) {
      const uint32_t block_kind = static_cast<uint32_t>(rng() % 9);
      for (uint32_t i = 0; i < 4; ++i) {
        x[4 * j + i] = random_value(rng, block_kind < 8 ? block_kind : rng() % 8);
      }
    }
    zfp::BlockGroup g;
    zfp::group_integers(x, g);
    for (uint32_t j = 0; j < 4; ++j) {
      uint32_t u[4];
      const int emax = zfp::block_integers(x + 4 * j, u);
      ASSERT_EQ(g.emax[j], emax) << "trial " << trial << " block " << j;
      if (emax == -127) continue;  // an all-zero block: its integers are never coded
      for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(g.u[j][i], u[i]) << "trial " << trial << " block " << j << " value " << i;
      }
    }
  }
}

TEST(ZfpBlockX4, GroupFloatsEqualBlockFloats) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 200000; ++trial) {
    zfp::BlockGroup g;
    for (uint32_t j = 0; j < 4; ++j) {
      // Every exponent a stream carries (8 bits - 127), and the empty block's (u = 0).
      g.emax[j] = static_cast<int>(rng() % 256) - 127;
      const bool empty = rng() % 16 == 0;
      const uint32_t width = static_cast<uint32_t>(rng() % 33);  // small and large integers
      for (uint32_t i = 0; i < 4; ++i) {
        const auto bits = static_cast<uint32_t>(rng());
        g.u[j][i] = empty ? 0 : (width == 32 ? bits : bits & ((1u << width) - 1));
      }
    }
    float x[16];
    zfp::group_floats(g, x);
    for (uint32_t j = 0; j < 4; ++j) {
      float expected[4];
      zfp::block_floats(g.emax[j], g.u[j], expected);
      for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(x[4 * j + i]), std::bit_cast<uint32_t>(expected[i]))
            << "trial " << trial << " block " << j << " value " << i << " emax " << g.emax[j];
      }
    }
  }
}

// An empty block reads as u = 0 (decode_block_integers), which block_floats turns into +0 at any
// exponent: what the zero flag means.
TEST(ZfpBlockX4, EmptyBlockDecodesToPositiveZeros) {
  for (int emax = -127; emax <= 128; ++emax) {
    const uint32_t u[4] = {0, 0, 0, 0};
    float x[4];
    zfp::block_floats(emax, u, x);
    for (float v : x) ASSERT_EQ(std::bit_cast<uint32_t>(v), 0u) << "emax " << emax;
  }
  zfp::BlockBits empty;  // a single 0 bit
  uint32_t u[4] = {1, 2, 3, 4};
  const int emax = zfp::decode_block_integers(empty, 32, u);
  float x[4];
  zfp::block_floats(emax, u, x);
  for (float v : x) EXPECT_EQ(std::bit_cast<uint32_t>(v), 0u);
}

}  // namespace
}  // namespace hycc
