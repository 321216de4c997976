#include "policy/buffer_keys.h"

#include <iterator>

namespace hycc::policy {

std::vector<uint64_t> BufferKeys::claim(const void* data, size_t bytes, uint64_t key) {
  std::vector<uint64_t> stale;
  if (bytes == 0) return stale;
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = start + bytes;
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranges_.lower_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second.end > start)
    --it;  // begins before, reaches in
  bool recorded = false;
  while (it != ranges_.end() && it->first < end) {
    if (it->first == start && it->second.end == end && it->second.key == key) {
      recorded = true;
      ++it;
      continue;
    }
    if (it->second.key != key) stale.push_back(it->second.key);
    it = ranges_.erase(it);
  }
  if (!recorded) ranges_.emplace(start, Range{end, key});
  return stale;
}

std::vector<uint64_t> BufferKeys::release() {
  std::vector<uint64_t> keys;
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [start, range] : ranges_) keys.push_back(range.key);
  ranges_.clear();
  return keys;
}

size_t BufferKeys::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return ranges_.size();
}

}  // namespace hycc::policy
