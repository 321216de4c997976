// Large scratch buffers kept for the next call. A call that allocates tens of MiB and frees them
// before the next call makes the allocator hand them back to the system (glibc unmaps blocks
// above its mmap threshold at once and trims the heap's top) and fault them in anew, zeroed,
// every time. Where page faults are dear (a virtual machine's) that cost more than the call's
// compression: the drop-in library's MPI_Ireduce_scatter_block of 16 MiB took 230-260 ms per call
// on 4 ranks instead of 30 (docs/results.md). Buffers given back here are kept (at most
// kPoolBuffers of them and kPoolBytes for each element type; smaller than kPoolMinBytes are not
// worth keeping) and
// taken again by the next call that fits them. Thread-safe. set_pool_limit() lowers or raises
// the byte limit (HYCC_POOL_MIB in PolicyEngine::from_environment; 0 keeps nothing).
#pragma once

#include <cstddef>
#include <vector>

namespace hycc {

inline constexpr size_t kPoolMinBytes = size_t{1} << 20;
inline constexpr size_t kPoolBuffers = 16;
inline constexpr size_t kPoolBytes = size_t{256} << 20;  // for each element type, by default

// n elements; their values are unspecified (a kept buffer's old contents, or zeros).
std::vector<float> pooled_floats(size_t n);
std::vector<std::byte> pooled_bytes(size_t n);

// Gives a buffer back for reuse (or frees it when it is small or the pool is full: the smallest
// buffers go first). v is left empty.
void recycle(std::vector<float>& v);
void recycle(std::vector<std::byte>& v);

// A pooled float buffer given back when it goes out of scope.
class PooledFloats {
 public:
  explicit PooledFloats(size_t n) : v_(pooled_floats(n)) {}
  ~PooledFloats() { recycle(v_); }
  PooledFloats(const PooledFloats&) = delete;
  PooledFloats& operator=(const PooledFloats&) = delete;

  float* data() { return v_.data(); }
  size_t size() const { return v_.size(); }

 private:
  std::vector<float> v_;
};

// The most bytes kept for each element type (kPoolBytes unless set); buffers beyond a new,
// lower limit are freed at once, the smallest first.
void set_pool_limit(size_t bytes);
size_t pool_limit();

// Bytes the pool holds, and frees them all (tests).
size_t pooled_bytes_held();
void release_pooled();

}  // namespace hycc
