#include "common/buffer_pool.h"

#include <algorithm>
#include <mutex>

namespace hycc {
namespace {

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
    if (kept.capacity() * sizeof(T) < kPoolMinBytes || kept.capacity() * sizeof(T) > kPoolBytes) {
      return;
    }
    kept.resize(kept.capacity());  // full: the next take() need not fill its tail
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(kept));
    // Over the limits: the smallest go first.
    std::sort(free_.begin(), free_.end(), [](const std::vector<T>& a, const std::vector<T>& b) {
      return a.capacity() > b.capacity();
    });
    while (free_.size() > kPoolBuffers || held() > kPoolBytes) free_.pop_back();
  }

  size_t held() const {
    size_t bytes = 0;
    for (const std::vector<T>& v : free_) bytes += v.capacity() * sizeof(T);
    return bytes;
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
size_t pooled_bytes_held() { return float_pool().held_locked() + byte_pool().held_locked(); }
void release_pooled() {
  float_pool().clear();
  byte_pool().clear();
}

}  // namespace hycc
