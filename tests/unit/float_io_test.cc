// max_abs_difference, the sampled error of the policy's calls: values that match (NaN with NaN,
// an infinity with itself) add no error; one that does not makes it infinite.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "codec/float_io.h"

namespace hycc::codec {
namespace {

double difference(std::vector<float> a, std::vector<float> b) {
  return max_abs_difference({DType::kF32, a.size(), a.data()}, {DType::kF32, b.size(), b.data()});
}

TEST(MaxAbsDifference, MatchingSpecialValuesAddNoError) {
  EXPECT_EQ(difference({1.0f, 2.0f, 3.0f}, {1.0f, 2.5f, 2.0f}), 1.0);
  EXPECT_EQ(difference({1.0f, INFINITY, NAN, -INFINITY}, {1.25f, INFINITY, -NAN, -INFINITY}), 0.25);
  EXPECT_EQ(difference({}, {}), 0.0);
}

TEST(MaxAbsDifference, MismatchedSpecialValuesAreInfinite) {
  EXPECT_EQ(difference({1.0f, NAN}, {1.0f, 2.0f}), INFINITY);
  EXPECT_EQ(difference({INFINITY}, {3e38f}), INFINITY);
  EXPECT_EQ(difference({INFINITY}, {-INFINITY}), INFINITY);
  EXPECT_EQ(difference({-3e38f}, {3e38f}), 2.0 * double(3e38f));  // in double: finite
}

}  // namespace
}  // namespace hycc::codec
