// policy::BufferKeys: the ranges behind buffer-derived gradient keys, and which keys a new range
// makes stale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policy/buffer_keys.h"

namespace hycc::policy {
namespace {

// Addresses in a buffer of our own (the class only compares them).
const std::byte* at(size_t offset) {
  static std::vector<std::byte> memory(4096);
  return memory.data() + offset;
}

std::vector<uint64_t> sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(BufferKeys, TheSameRangeAgainIsKept) {
  BufferKeys keys;
  EXPECT_TRUE(keys.claim(at(0), 100, 1).empty());
  EXPECT_TRUE(keys.claim(at(0), 100, 1).empty());
  EXPECT_EQ(keys.size(), 1u);
}

TEST(BufferKeys, DisjointAndAdjacentRangesStay) {
  BufferKeys keys;
  EXPECT_TRUE(keys.claim(at(100), 100, 1).empty());
  EXPECT_TRUE(keys.claim(at(200), 50, 2).empty());  // begins where 1 ends
  EXPECT_TRUE(keys.claim(at(0), 100, 3).empty());   // ends where 1 begins
  EXPECT_EQ(keys.size(), 3u);
}

TEST(BufferKeys, EveryOverlapMakesAKeyStale) {
  BufferKeys keys;
  keys.claim(at(100), 100, 1);
  keys.claim(at(300), 100, 2);
  keys.claim(at(500), 100, 3);
  EXPECT_EQ(keys.claim(at(100), 60, 4), std::vector<uint64_t>{1});  // same start, shorter
  EXPECT_EQ(keys.claim(at(150), 10, 5), std::vector<uint64_t>{4});  // inside 4, from behind
  EXPECT_EQ(sorted(keys.claim(at(159), 342, 6)), (std::vector<uint64_t>{2, 3, 5}));  // spans
  EXPECT_EQ(keys.claim(at(0), 101, 7), std::vector<uint64_t>{});  // reaches 100: was 1's
  EXPECT_EQ(keys.size(), 2u);                                     // 6 and 7
  EXPECT_EQ(keys.claim(at(0), 4096, 8).size(), 2u);
  EXPECT_EQ(keys.size(), 1u);
}

TEST(BufferKeys, AKeyOverAnotherRangeIsNotItsOwnStaleKey) {
  BufferKeys keys;
  keys.claim(at(0), 100, 1);
  EXPECT_TRUE(keys.claim(at(0), 200, 1).empty());  // same key (the count hashed alone)
  EXPECT_EQ(keys.size(), 1u);
}

TEST(BufferKeys, EmptyRangesRecordNothing) {
  BufferKeys keys;
  keys.claim(at(0), 100, 1);
  EXPECT_TRUE(keys.claim(at(50), 0, 2).empty());
  EXPECT_EQ(keys.size(), 1u);
}

}  // namespace
}  // namespace hycc::policy
