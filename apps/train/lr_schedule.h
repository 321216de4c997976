// Learning rate: linear warmup from 0 to max_lr over `warmup` steps, then cosine decay to
// min_lr at `total` steps (and min_lr after). Steps count from 0.
#pragma once

#include <algorithm>
#include <cmath>

namespace hycc::train {

struct LrSchedule {
  float max_lr = 1e-3f;
  float min_lr = 1e-4f;
  int warmup = 0;
  int total = 1;

  float at(int step) const {
    if (step < warmup) return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup);
    if (step >= total || total <= warmup) return min_lr;
    const double progress = static_cast<double>(step - warmup) / (total - warmup);
    const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
    return static_cast<float>(min_lr + cosine * (max_lr - min_lr));
  }
};

}  // namespace hycc::train
