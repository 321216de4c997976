// The pieces of codec/block/quant_block.h that only the CUDA kernels combine differently from
// the CPU codec: the warp's butterfly reduction of key ranges (lane l scans elements l, l + 32,
// ...; empty lanes included) must give the range of a sequential scan.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "codec/block/quant_block.h"
#include "test_util.h"

namespace hycc {
namespace {

using codec::quant::KeyRange;

KeyRange warp_range(const float* x, size_t n) {
  std::array<KeyRange, 32> lanes;
  for (size_t lane = 0; lane < 32; ++lane) {
    for (size_t i = lane; i < n; i += 32) lanes[lane].add(codec::quant::order_key(x[i]));
  }
  for (size_t d = 16; d > 0; d /= 2) {
    std::array<KeyRange, 32> next = lanes;
    for (size_t lane = 0; lane < 32; ++lane) {
      next[lane].merge(lanes[lane ^ d].lo, lanes[lane ^ d].hi);
    }
    lanes = next;
  }
  for (const KeyRange& r : lanes) EXPECT_TRUE(r.lo == lanes[0].lo && r.hi == lanes[0].hi);
  return lanes[0];
}

TEST(QuantBlock, WarpReductionOfKeyRangesEqualsTheSequentialScan) {
  const std::vector<float> values = test::data_with_specials(5000, 3);
  for (size_t n : {1, 2, 7, 8, 31, 32, 33, 64, 100, 4096}) {
    for (size_t begin = 0; begin + n <= values.size(); begin += 997) {
      const KeyRange expected = codec::quant::key_range(values.data() + begin, n);
      const KeyRange got = warp_range(values.data() + begin, n);
      EXPECT_EQ(got.lo, expected.lo) << n << " " << begin;
      EXPECT_EQ(got.hi, expected.hi) << n << " " << begin;
    }
  }
}

}  // namespace
}  // namespace hycc
