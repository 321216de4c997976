#include "common/synthetic_data.h"

#include <cmath>
#include <random>

#include "hycc/error.h"

namespace hycc {

DataKind parse_data_kind(std::string_view name) {
  if (name == "gaussian") return DataKind::kGaussian;
  if (name == "laplace") return DataKind::kLaplace;
  if (name == "smooth") return DataKind::kSmooth;
  throw InvalidArgument(
      tagged("data", "unknown data kind '", name, "'; expected gaussian|laplace|smooth"));
}

std::vector<float> make_data(DataKind kind, size_t count, uint64_t seed) {
  std::vector<float> v(count);
  std::mt19937_64 rng(seed);
  switch (kind) {
    case DataKind::kGaussian: {
      std::normal_distribution<float> d(0.0f, 1.0f);
      for (auto& x : v) x = d(rng);
      break;
    }
    case DataKind::kLaplace: {
      std::exponential_distribution<float> d(1.0f);
      std::bernoulli_distribution sign(0.5);
      for (auto& x : v) x = sign(rng) ? d(rng) : -d(rng);
      break;
    }
    case DataKind::kSmooth: {
      std::normal_distribution<float> noise(0.0f, 1e-3f);
      for (size_t i = 0; i < count; ++i) {
        const double t = static_cast<double>(i);
        v[i] = static_cast<float>(std::sin(t * 1e-3) + 0.5 * std::sin(t * 7.3e-3 + 1.0) +
                                  0.25 * std::cos(t * 3.1e-2)) +
               noise(rng);
      }
      break;
    }
  }
  return v;
}

}  // namespace hycc
