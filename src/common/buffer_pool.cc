#include "common/buffer_pool.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace hycc {
namespace {

std::atomic<size_t> limit_bytes{kPoolBytes};

template <typename T>
class Pool {
 public:
  std::vector<T> take(size_t n) {
    std::vector<T> v;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      // The smallest kept buffer that holds n.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->capacity() >= n && (best == free_.end() || it->capacity() < best->capacity())) {
          best = it;
        }
      }
      if (best != free_.end()) {
        v = std::move(*best);
        free_.erase(best);
      }
    }
    v.resize(n);  // kept buffers are full (recycle), so this only shrinks them
    return v;
  }

  void give(std::vector<T>& v) {
    std::vector<T> kept = std::move(v);
    v = {};
    const size_t bytes = kept.capacity() * sizeof(T);
    if (bytes < kPoolMinBytes || bytes > limit_bytes.load(std::memory_order_relaxed)) return;
    kept.resize(kept.capacity());  // full: the next take() need not fill its tail
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(kept));
    trim();
  }

  // Over the limits: the smallest go first.
  void trim_locked() {
    const std::lock_guard<std::mutex> lock(mutex_);
    trim();
  }

  size_t held_locked() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return held();
  }

  void clear() {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.clear();
  }

 private:
  void trim() {
    std::sort(free_.begin(), free_.end(), [](const std::vector<T>& a, const std::vector<T>& b) {
      return a.capacity() > b.capacity();
    });
    const size_t limit = limit_bytes.load(std::memory_order_relaxed);
    while (!free_.empty() && (free_.size() > kPoolBuffers || held() > limit)) free_.pop_back();
  }

  size_t held() const {
    size_t bytes = 0;
    for (const std::vector<T>& v : free_) bytes += v.capacity() * sizeof(T);
    return bytes;
  }

  std::mutex mutex_;
  std::vector<std::vector<T>> free_;  // guarded by mutex_
};

Pool<float>& float_pool() {
  static Pool<float>* pool = new Pool<float>;  // never destroyed: usable during exit
  return *pool;
}

Pool<std::byte>& byte_pool() {
  static Pool<std::byte>* pool = new Pool<std::byte>;
  return *pool;
}

}  // namespace

std::vector<float> pooled_floats(size_t n) { return float_pool().take(n); }
std::vector<std::byte> pooled_bytes(size_t n) { return byte_pool().take(n); }
void recycle(std::vector<float>& v) { float_pool().give(v); }
void recycle(std::vector<std::byte>& v) { byte_pool().give(v); }
void set_pool_limit(size_t bytes) {
  limit_bytes.store(bytes, std::memory_order_relaxed);
  float_pool().trim_locked();
  byte_pool().trim_locked();
}
size_t pool_limit() { return limit_bytes.load(std::memory_order_relaxed); }
size_t pooled_bytes_held() { return float_pool().held_locked() + byte_pool().held_locked(); }
void release_pooled() {
  float_pool().clear();
  byte_pool().clear();
}

}  // namespace hycc
