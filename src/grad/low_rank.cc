#include "grad/low_rank.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/synthetic_data.h"

namespace hycc::grad {
namespace {

// Dot product of n floats with 8 partial sums in a fixed order (vectorizable, deterministic).
float dot(const float* a, const float* b, size_t n) {
  float acc[8] = {};
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (size_t t = 0; t < 8; ++t) acc[t] += a[j + t] * b[j + t];
  }
  for (; j < n; ++j) acc[j % 8] += a[j] * b[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// A column keeps a direction of its own if the projections left more than 1e-5 of its norm
// (float32 rounding of a dependent column leaves about 1e-7); otherwise it becomes 0, rather than
// a unit vector made of rounding errors.
bool independent(double norm2_after, double norm2_before) {
  return norm2_after > 0 && norm2_after > 1e-10 * norm2_before;
}

// y += alpha x over n floats.
void axpy(float alpha, const float* x, float* y, size_t n) {
  for (size_t j = 0; j < n; ++j) y[j] += alpha * x[j];
}

}  // namespace

void multiply_mq(std::span<const float> m, size_t rows, size_t cols, std::span<const float> qt,
                 size_t r, std::span<float> p) {
  for (size_t i = 0; i < rows; ++i) {
    for (size_t k = 0; k < r; ++k) p[i * r + k] = dot(&m[i * cols], &qt[k * cols], cols);
  }
}

void multiply_mtp(std::span<const float> m, size_t rows, size_t cols, std::span<const float> p,
                  size_t r, std::span<float> qt) {
  std::fill(qt.begin(), qt.begin() + static_cast<std::ptrdiff_t>(r * cols), 0.0f);
  std::vector<float> block(r * cols);
  for (size_t b = 0; b < rows; b += kMtpRowBlock) {
    std::fill(block.begin(), block.end(), 0.0f);
    for (size_t i = b; i < std::min(rows, b + kMtpRowBlock); ++i) {
      for (size_t k = 0; k < r; ++k) axpy(p[i * r + k], &m[i * cols], &block[k * cols], cols);
    }
    for (size_t x = 0; x < r * cols; ++x) qt[x] += block[x];
  }
}

void multiply_pqt(std::span<const float> p, std::span<const float> qt, size_t rows, size_t cols,
                  size_t r, std::span<float> out) {
  for (size_t i = 0; i < rows; ++i) {
    float* o = &out[i * cols];
    std::fill(o, o + cols, 0.0f);
    for (size_t k = 0; k < r; ++k) axpy(p[i * r + k], &qt[k * cols], o, cols);
  }
}

void orthogonalize(std::span<float> p, size_t rows, size_t r) {
  std::vector<double> dots(r);
  for (size_t c = 0; c < r; ++c) {
    double before = 0;
    for (size_t i = 0; i < rows; ++i) before += double(p[i * r + c]) * double(p[i * r + c]);
    // Two rounds of: dots = P[:, 0..c)^T P[:, c] (one pass over the rows), then subtract.
    for (int round = 0; round < 2 && c > 0; ++round) {
      std::fill(dots.begin(), dots.end(), 0.0);
      for (size_t i = 0; i < rows; ++i) {
        const float* row = &p[i * r];
        for (size_t k = 0; k < c; ++k) dots[k] += double(row[k]) * double(row[c]);
      }
      for (size_t i = 0; i < rows; ++i) {
        float* row = &p[i * r];
        double v = row[c];
        for (size_t k = 0; k < c; ++k) v -= dots[k] * double(row[k]);
        row[c] = static_cast<float>(v);
      }
    }
    double norm2 = 0;
    for (size_t i = 0; i < rows; ++i) norm2 += double(p[i * r + c]) * double(p[i * r + c]);
    const double inv = independent(norm2, before) ? 1.0 / std::sqrt(norm2) : 0.0;
    for (size_t i = 0; i < rows; ++i) p[i * r + c] = static_cast<float>(p[i * r + c] * inv);
  }
}

void multiply_mq_reference(std::span<const float> m, size_t rows, size_t cols,
                           std::span<const float> qt, size_t r, std::span<float> p) {
  for (size_t i = 0; i < rows; ++i) {
    for (size_t k = 0; k < r; ++k) {
      double s = 0;
      for (size_t j = 0; j < cols; ++j) s += double(m[i * cols + j]) * double(qt[k * cols + j]);
      p[i * r + k] = static_cast<float>(s);
    }
  }
}

void multiply_mtp_reference(std::span<const float> m, size_t rows, size_t cols,
                            std::span<const float> p, size_t r, std::span<float> qt) {
  for (size_t k = 0; k < r; ++k) {
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t i = 0; i < rows; ++i) s += double(p[i * r + k]) * double(m[i * cols + j]);
      qt[k * cols + j] = static_cast<float>(s);
    }
  }
}

void multiply_pqt_reference(std::span<const float> p, std::span<const float> qt, size_t rows,
                            size_t cols, size_t r, std::span<float> out) {
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t k = 0; k < r; ++k) s += double(p[i * r + k]) * double(qt[k * cols + j]);
      out[i * cols + j] = static_cast<float>(s);
    }
  }
}

void orthogonalize_reference(std::span<float> p, size_t rows, size_t r) {
  std::vector<double> col(rows);
  for (size_t c = 0; c < r; ++c) {
    for (size_t i = 0; i < rows; ++i) col[i] = p[i * r + c];
    double before = 0;
    for (size_t i = 0; i < rows; ++i) before += col[i] * col[i];
    for (size_t k = 0; k < c; ++k) {
      double d = 0;
      for (size_t i = 0; i < rows; ++i) d += double(p[i * r + k]) * col[i];
      for (size_t i = 0; i < rows; ++i) col[i] -= d * double(p[i * r + k]);
    }
    double norm2 = 0;
    for (size_t i = 0; i < rows; ++i) norm2 += col[i] * col[i];
    const double inv = independent(norm2, before) ? 1.0 / std::sqrt(norm2) : 0.0;
    for (size_t i = 0; i < rows; ++i) p[i * r + c] = static_cast<float>(col[i] * inv);
  }
}

void fill_normal(std::span<float> x, uint64_t seed) {
  constexpr double kTwoPi = 6.283185307179586;
  for (size_t i = 0; i < x.size(); i += 2) {
    const uint64_t h = splitmix64(splitmix64(seed) ^ (i / 2));
    const double u1 = (static_cast<double>(h >> 40) + 1.0) / 16777217.0;  // (0, 1)
    const double u2 = static_cast<double>(h & 0xffffff) / 16777216.0;     // [0, 1)
    const double radius = std::sqrt(-2.0 * std::log(u1));
    x[i] = static_cast<float>(radius * std::cos(kTwoPi * u2));
    if (i + 1 < x.size()) x[i + 1] = static_cast<float>(radius * std::sin(kTwoPi * u2));
  }
}

}  // namespace hycc::grad
