#include "torch/step_keys.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "common/xxh3.h"

namespace hycc::torch_backend {
namespace {

std::atomic<uint64_t>& steps() {
  static std::atomic<uint64_t> n{0};
  return n;
}

}  // namespace

void count_optimizer_step() { steps().fetch_add(1, std::memory_order_relaxed); }
uint64_t optimizer_steps() { return steps().load(std::memory_order_relaxed); }

StepKeys::Key StepKeys::next(Operation op, DType dtype, size_t count) {
  Key out;
  const uint64_t now = optimizer_steps();
  if (now == 0) return out;
  const std::lock_guard<std::mutex> lock(mutex_);
  if (now != step_) {
    out.leaving_buffer_keys = step_ == 0;
    std::set_difference(used_before_.begin(), used_before_.end(), used_.begin(), used_.end(),
                        std::back_inserter(out.stale));
    used_before_ = std::move(used_);
    used_.clear();
    made_.clear();
    step_ = now;
  }
  const uint64_t place = made_[{op, dtype, count}]++;
  const uint64_t fields[] = {group_, uint64_t(op), uint64_t(dtype), uint64_t(count), place};
  // Never 0, which asks the engine for a buffer key.
  out.key = std::max<uint64_t>(xxh3(fields, sizeof(fields)), 1);
  used_.insert(out.key);
  return out;
}

}  // namespace hycc::torch_backend
