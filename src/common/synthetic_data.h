// Deterministic synthetic inputs shared by the tests and the benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/host_device.h"

namespace hycc {

enum class DataKind {
  kGaussian,  // N(0, 1), like noisy gradients
  kLaplace,   // Laplace(0, 1): heavier tails
  kSmooth,    // sum of a few sinusoids plus small noise, like activations along a sequence
};

// Parses "gaussian", "laplace", "smooth"; throws InvalidArgument otherwise.
DataKind parse_data_kind(std::string_view name);

// `count` float32 values of the given kind from a fixed-seed generator.
std::vector<float> make_data(DataKind kind, size_t count, uint64_t seed = 1);

// A counter-based random generator (SplitMix64): the i-th value of a stream depends only on
// (seed, i), so results are reproducible regardless of how work is split.
HYCC_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace hycc
