// Inputs shared by the tests of our zfp coders against libzfp (zfp_fixed_rate_test.cc,
// zfp_fixed_accuracy_test.cc): finite floats at every scale and bit pattern zfp treats apart.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/synthetic_data.h"

namespace hycc::zfp_test {

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Named inputs of `count` finite floats.
inline std::vector<std::pair<std::string, std::vector<float>>> inputs(size_t count, uint64_t seed) {
  std::vector<std::pair<std::string, std::vector<float>>> all;
  std::mt19937_64 rng(seed);
  for (float scale : {1.0f, 1e-3f, 1e20f, 3e37f, 1e-30f, 1e-36f, 1e-40f, 1e-44f}) {
    std::vector<float> v = make_data(DataKind::kGaussian, count, seed);
    for (float& x : v) x *= scale;
    all.emplace_back("gaussian*" + std::to_string(scale), v);
  }
  std::vector<float> bits(count);
  for (float& x : bits) {
    uint32_t u;
    do u = static_cast<uint32_t>(rng());
    while ((u & 0x7f800000u) == 0x7f800000u);
    std::memcpy(&x, &u, 4);
  }
  all.emplace_back("random finite bit patterns", bits);
  std::vector<float> denormals(count);
  for (float& x : denormals) {
    const uint32_t u = static_cast<uint32_t>(rng()) & 0x807fffffu;
    std::memcpy(&x, &u, 4);
  }
  all.emplace_back("denormals", denormals);
  all.emplace_back("zeros", std::vector<float>(count, 0.0f));
  all.emplace_back("negative zeros", std::vector<float>(count, -0.0f));
  all.emplace_back("constant", std::vector<float>(count, -1.75f));
  std::vector<float> mixed = make_data(DataKind::kSmooth, count, seed);
  for (size_t i = 0; i < count; i += 5) mixed[i] = 0.0f;
  for (size_t i = 2; i < count; i += 11) mixed[i] = (i % 2 ? 1 : -1) * 3.4e38f;
  for (size_t i = 3; i < count; i += 13) mixed[i] = 1e-45f;
  all.emplace_back("mixed extremes", mixed);
  std::vector<float> powers(count);
  for (size_t i = 0; i < count; ++i) powers[i] = std::ldexp(1.0f, static_cast<int>(i % 250) - 125);
  all.emplace_back("powers of two", powers);
  return all;
}

}  // namespace hycc::zfp_test
