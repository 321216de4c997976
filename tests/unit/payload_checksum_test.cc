// The device payload checksum (device/payload_checksum.h): the kernel's split of the words
// over threads (grid-stride, per-thread sums, any order of the additions) gives the sequential
// value, and every single-bit change, word swap, truncation and extension of a payload changes
// it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/payload_checksum.h"

namespace hycc::device {
namespace {

std::vector<unsigned char> payload(size_t bytes, uint64_t seed) {
  std::vector<unsigned char> p(bytes);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(splitmix64(seed + i));
  return p;
}

// The CUDA kernel's reduction replayed: `threads` threads, thread t takes words t, t + threads,
// ..., then the per-thread sums are added in reverse order.
uint64_t split_checksum(const std::vector<unsigned char>& p, size_t threads) {
  const size_t words = checksum_words(p.size());
  std::vector<uint64_t> per_thread(threads, 0);
  for (size_t t = 0; t < threads; ++t) {
    for (size_t i = t; i < words; i += threads) {
      per_thread[t] += checksum_term(payload_word(p.data(), p.size(), i), i);
    }
  }
  uint64_t h = splitmix64(p.size());
  for (size_t t = threads; t-- > 0;) h += per_thread[t];
  return h;
}

TEST(PayloadChecksum, AnySplitOfTheWordsGivesTheSameValue) {
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{4099}}) {
    const std::vector<unsigned char> p = payload(bytes, bytes);
    for (const size_t threads : {size_t{1}, size_t{3}, size_t{32}, size_t{256}, size_t{10000}}) {
      EXPECT_EQ(split_checksum(p, threads), payload_checksum(p.data(), p.size()))
          << bytes << " bytes, " << threads << " threads";
    }
  }
}

TEST(PayloadChecksum, DetectsBitFlipsSwapsAndLengthChanges) {
  const std::vector<unsigned char> p = payload(1003, 5);
  const uint64_t h = payload_checksum(p.data(), p.size());
  size_t missed = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<unsigned char> q = p;
      q[i] ^= static_cast<unsigned char>(1u << bit);
      missed += payload_checksum(q.data(), q.size()) == h;
    }
  }
  EXPECT_EQ(missed, 0u) << "single-bit changes not detected";
  for (size_t w = 0; w + 1 < p.size() / 8; ++w) {
    std::vector<unsigned char> q = p;
    std::memcpy(q.data() + 8 * w, p.data() + 8 * (w + 1), 8);
    std::memcpy(q.data() + 8 * (w + 1), p.data() + 8 * w, 8);
    EXPECT_NE(payload_checksum(q.data(), q.size()), h) << "words " << w << " and " << w + 1;
  }
  // Cut short by one byte, or one zero byte longer (the padding of the last word is zero).
  EXPECT_NE(payload_checksum(p.data(), p.size() - 1), h);
  std::vector<unsigned char> longer = p;
  longer.push_back(0);
  EXPECT_NE(payload_checksum(longer.data(), longer.size()), h);
}

}  // namespace
}  // namespace hycc::device
