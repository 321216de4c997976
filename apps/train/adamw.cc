#include "adamw.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hycc/error.h"

namespace hycc::train {

AdamW::AdamW(const std::vector<TensorInfo>& tensors, size_t begin, size_t end, AdamWConfig config)
    : config_(config), begin_(begin), end_(end), m_(end - begin, 0.0f), v_(end - begin, 0.0f) {
  if (end < begin) throw InvalidArgument(tagged("train:adamw", "range end before begin"));
  for (const TensorInfo& t : tensors) {
    const size_t lo = std::max(begin, t.offset);
    const size_t hi = std::min(end, t.offset + t.count);
    if (lo < hi) ranges_.push_back({lo, hi, t.weight_decay});
  }
}

void AdamW::update(float* params, const float* grads, float lr, int step) {
  const float b1 = config_.beta1;
  const float b2 = config_.beta2;
  const float correction1 = 1.0f - std::pow(b1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(b2, static_cast<float>(step));
  for (const Range& r : ranges_) {
    const float decay = r.decay ? config_.weight_decay : 0.0f;
    const long n = static_cast<long>(r.end - r.begin);
    float* p = params + r.begin;
    const float* g = grads + r.begin;
    float* m = m_.data() + (r.begin - begin_);
    float* v = v_.data() + (r.begin - begin_);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (1.0f - b1) * g[i];
      v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
      const float m_hat = m[i] / correction1;
      const float v_hat = v[i] / correction2;
      p[i] -= lr * (m_hat / (std::sqrt(v_hat) + config_.eps) + decay * p[i]);
    }
  }
}

double local_sum_squares(const float* grads, const std::vector<TensorInfo>& tensors,
                         bool count_replicated) {
  return local_sum_squares(grads, tensors, count_replicated, 0, SIZE_MAX);
}

double local_sum_squares(const float* grads, const std::vector<TensorInfo>& tensors,
                         bool count_replicated, size_t begin, size_t end) {
  double total = 0.0;
  for (const TensorInfo& t : tensors) {
    if (t.tied_copy) continue;
    if (t.split == TpSplit::kReplicated && !count_replicated) continue;
    const size_t lo = std::max(begin, t.offset);
    const size_t hi = std::min(end, t.offset + t.count);
    double s = 0.0;
    for (size_t i = lo; i < hi; ++i) s += static_cast<double>(grads[i]) * grads[i];
    total += s;
  }
  return total;
}

float clip_scale(double global_sum_squares, float max_norm) {
  const double norm = std::sqrt(global_sum_squares);
  if (max_norm <= 0.0f || norm <= max_norm) return 1.0f;
  return static_cast<float>(max_norm / (norm + 1e-6));
}

void apply_clip(float* grads, size_t count, float scale) {
  if (scale == 1.0f) return;
  const long n = static_cast<long>(count);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) grads[i] *= scale;
}

}  // namespace hycc::train
