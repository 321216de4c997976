// Inputs of the CPU replays of the device codecs (eb_stages_test.cc, mpc_stages_test.cc): the
// data kinds a codec must handle, by name.
#pragma once

#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "common/synthetic_data.h"
#include "test_util.h"

namespace hycc::test {

inline const char* const kStageData[] = {"gaussian",  "zeros",    "constant",
                                         "denormals", "specials", "smooth"};

// The kinds a test parameter names: one of kStageData, or "all" of them (fewer test processes).
inline std::vector<std::string> stage_kinds(const std::string& kind) {
  if (kind != "all") return {kind};
  return std::vector<std::string>(std::begin(kStageData), std::end(kStageData));
}

inline std::vector<float> stage_data(const std::string& kind, size_t count) {
  if (kind == "zeros") return std::vector<float>(count, 0.0f);
  if (kind == "constant") return std::vector<float>(count, -3.25f);
  if (kind == "specials") return data_with_specials(count, 3);  // NaN, +-Inf, -0, extremes
  if (kind == "smooth") return make_data(DataKind::kSmooth, count, 3);
  std::vector<float> v = make_data(DataKind::kGaussian, count, 3);
  if (kind == "denormals") {
    for (float& x : v) x = std::ldexp(x, -130);  // mostly subnormal binary32
  }
  return v;
}

}  // namespace hycc::test
