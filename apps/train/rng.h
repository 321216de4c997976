// Small portable random numbers (the standard library's distributions differ between
// implementations): SplitMix64 and a Box-Muller normal. Same seed, same numbers everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace hycc::train {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A seed derived from a base seed and a few integers (step, sequence index, ...).
inline uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t s = seed;
  uint64_t h = splitmix64(s);
  for (uint64_t v : {a, b, c}) {
    s = h ^ v;
    h = splitmix64(s);
  }
  return h;
}

// FNV-1a of a name, to give every parameter tensor its own random stream.
inline uint64_t hash_name(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64(state_); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0 (the modulo bias is below 2^-40 for n < 2^24).
  uint64_t below(uint64_t n) { return next() % n; }
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace hycc::train
