// common/buffer_pool.h: large buffers given back are taken again by the next call that fits
// them, within the pool's limits; small ones are not kept.
#include "common/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace hycc {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class BufferPool : public ::testing::Test {
 protected:
  void SetUp() override { release_pooled(); }
  void TearDown() override {
    set_pool_limit(kPoolBytes);
    release_pooled();
  }
};

TEST_F(BufferPool, GivesTheSizeAskedFor) {
  EXPECT_EQ(pooled_floats(0).size(), 0u);
  EXPECT_EQ(pooled_floats(12345).size(), 12345u);
  EXPECT_EQ(pooled_bytes(3 * kMiB).size(), 3 * kMiB);
}

TEST_F(BufferPool, ReusesAKeptBufferThatFits) {
  std::vector<float> v = pooled_floats(kMiB);  // 4 MiB
  const float* where = v.data();
  recycle(v);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(pooled_bytes_held(), 4 * kMiB);
  std::vector<float> w = pooled_floats(kMiB / 2);  // fits: the same memory
  EXPECT_EQ(w.data(), where);
  EXPECT_EQ(w.size(), kMiB / 2);
  EXPECT_EQ(pooled_bytes_held(), 0u);
  recycle(w);  // kept whole: its capacity, not its size
  EXPECT_EQ(pooled_bytes_held(), 4 * kMiB);
  std::vector<float> larger = pooled_floats(2 * kMiB);  // does not fit: new memory
  EXPECT_NE(larger.data(), where);
  EXPECT_EQ(pooled_bytes_held(), 4 * kMiB);
}

TEST_F(BufferPool, TakesTheSmallestThatFits) {
  std::vector<std::byte> big = pooled_bytes(8 * kMiB), small = pooled_bytes(2 * kMiB);
  const std::byte* small_at = small.data();
  recycle(big);
  recycle(small);
  EXPECT_EQ(pooled_bytes(kMiB + 1).data(), small_at);
}

TEST_F(BufferPool, KeepsNoSmallBuffers) {
  std::vector<float> v = pooled_floats(kPoolMinBytes / sizeof(float) - 1);
  recycle(v);
  EXPECT_EQ(pooled_bytes_held(), 0u);
}

TEST_F(BufferPool, DropsTheSmallestBeyondItsLimits) {
  for (size_t i = 0; i < kPoolBuffers + 4; ++i) {
    std::vector<std::byte> v = pooled_bytes(2 * kMiB);
    recycle(v);
    std::vector<std::byte> w(2 * kMiB);  // not from the pool: the pool grows
    recycle(w);
  }
  EXPECT_EQ(pooled_bytes_held(), kPoolBuffers * 2 * kMiB);
  std::vector<std::byte> large(16 * kMiB);
  const std::byte* large_at = large.data();
  recycle(large);  // a smallest one goes
  EXPECT_EQ(pooled_bytes_held(), (kPoolBuffers - 1) * 2 * kMiB + 16 * kMiB);
  EXPECT_EQ(pooled_bytes(10 * kMiB).data(), large_at);

  // Two buffers of more than half the byte limit: one is kept; one over the limit is not.
  release_pooled();
  const size_t over_half = (kPoolBytes / 2 + kMiB) / sizeof(float);
  for (size_t i = 0; i < 2; ++i) {
    std::vector<float> v(over_half);
    recycle(v);
  }
  EXPECT_EQ(pooled_bytes_held(), over_half * sizeof(float));
  release_pooled();
  std::vector<float> too_large(kPoolBytes / sizeof(float) + 1);
  recycle(too_large);
  EXPECT_EQ(pooled_bytes_held(), 0u);
}

TEST_F(BufferPool, ALowerLimitFreesTheSmallestAndKeepsLess) {
  EXPECT_EQ(pool_limit(), kPoolBytes);
  for (size_t mib : {2, 4, 8}) {
    std::vector<std::byte> v(mib * kMiB);
    recycle(v);
  }
  EXPECT_EQ(pooled_bytes_held(), 14 * kMiB);
  set_pool_limit(10 * kMiB);  // 2 and 4 MiB go, 8 stays
  EXPECT_EQ(pool_limit(), 10 * kMiB);
  EXPECT_EQ(pooled_bytes_held(), 8 * kMiB);
  std::vector<std::byte> over(11 * kMiB);
  recycle(over);  // over the limit on its own: not kept
  EXPECT_EQ(pooled_bytes_held(), 8 * kMiB);
  std::vector<std::byte> two(2 * kMiB);
  recycle(two);  // 10 MiB in all: kept
  EXPECT_EQ(pooled_bytes_held(), 10 * kMiB);

  set_pool_limit(0);  // nothing kept, nothing taken again
  EXPECT_EQ(pooled_bytes_held(), 0u);
  std::vector<float> v = pooled_floats(kMiB);
  recycle(v);
  EXPECT_EQ(pooled_bytes_held(), 0u);

  set_pool_limit(kPoolBytes);
  std::vector<float> w = pooled_floats(kMiB);
  recycle(w);
  EXPECT_EQ(pooled_bytes_held(), 4 * kMiB);
}

TEST_F(BufferPool, ThreadsShareIt) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        std::vector<float> v = pooled_floats(kMiB / 2 + size_t(t * 1000 + i));
        v.front() = v.back() = float(t);
        EXPECT_EQ(v.back(), float(t));
        recycle(v);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(pooled_bytes_held(), kPoolBuffers * 4 * kMiB);
}

}  // namespace
}  // namespace hycc
