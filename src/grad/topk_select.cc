#include "grad/topk_select.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace hycc::grad {
namespace {

uint32_t magnitude_key(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & 0x7fffffffu;
}

}  // namespace

std::vector<uint64_t> select_topk(std::span<const float> x, size_t k) {
  const size_t n = x.size();
  k = std::min(k, n);
  std::vector<uint64_t> idx;
  if (k == 0) return idx;
  idx.reserve(k);
  if (k == n) {
    for (size_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  // The k-th largest key; every key above it is in, the first ones equal to it fill up.
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = magnitude_key(x[i]);
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k - 1), keys.end(),
                   std::greater<>());
  const uint32_t threshold = keys[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += magnitude_key(x[i]) > threshold ? 1 : 0;
  size_t ties = k - above;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = magnitude_key(x[i]);
    if (key > threshold) {
      idx.push_back(i);
    } else if (key == threshold && ties > 0) {
      idx.push_back(i);
      --ties;
    }
  }
  return idx;
}

std::vector<uint64_t> select_topk_reference(std::span<const float> x, size_t k) {
  std::vector<std::pair<uint32_t, uint64_t>> order;
  for (size_t i = 0; i < x.size(); ++i) order.emplace_back(magnitude_key(x[i]), i);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint64_t> idx;
  for (size_t i = 0; i < std::min(k, order.size()); ++i) idx.push_back(order[i].second);
  std::sort(idx.begin(), idx.end());
  return idx;
}

int index_bits(size_t n) { return n <= 2 ? 1 : static_cast<int>(std::bit_width(n - 1)); }

size_t packed_words(size_t k, int bits) { return (k * static_cast<size_t>(bits) + 31) / 32; }

void pack_indices(std::span<const uint64_t> idx, int bits, std::span<uint32_t> out) {
  uint64_t acc = 0;  // pending bits, least significant first
  int filled = 0;
  size_t w = 0;
  for (const uint64_t v : idx) {
    // At most 31 pending bits, so up to 33 of v fit into the 64-bit accumulator at once.
    int left = bits;
    uint64_t rest = v;
    while (left > 0) {
      const int take = std::min(left, 32);
      acc |= (rest & ((uint64_t{1} << take) - 1)) << filled;
      filled += take;
      rest >>= take;
      left -= take;
      while (filled >= 32) {
        out[w++] = static_cast<uint32_t>(acc);
        acc >>= 32;
        filled -= 32;
      }
    }
  }
  if (filled > 0) out[w++] = static_cast<uint32_t>(acc);
}

void unpack_indices(std::span<const uint32_t> in, int bits, std::span<uint64_t> idx) {
  uint64_t acc = 0;
  int filled = 0;
  size_t w = 0;
  for (uint64_t& v : idx) {
    v = 0;
    int got = 0;
    while (got < bits) {
      if (filled == 0) {
        acc = in[w++];
        filled = 32;
      }
      const int take = std::min(bits - got, filled);
      v |= (acc & ((uint64_t{1} << take) - 1)) << got;
      acc >>= take;
      filled -= take;
      got += take;
    }
  }
}

void pack_indices_reference(std::span<const uint64_t> idx, int bits, std::span<uint32_t> out) {
  std::fill(out.begin(), out.end(), 0u);
  size_t pos = 0;
  for (const uint64_t v : idx) {
    for (int b = 0; b < bits; ++b, ++pos) {
      if ((v >> b) & 1) out[pos / 32] |= uint32_t{1} << (pos % 32);
    }
  }
}

void unpack_indices_reference(std::span<const uint32_t> in, int bits, std::span<uint64_t> idx) {
  size_t pos = 0;
  for (uint64_t& v : idx) {
    v = 0;
    for (int b = 0; b < bits; ++b, ++pos) v |= uint64_t{(in[pos / 32] >> (pos % 32)) & 1} << b;
  }
}

}  // namespace hycc::grad
