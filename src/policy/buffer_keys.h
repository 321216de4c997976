// The memory behind the gradient states a PolicyEngine keys by buffer (the caller gave no key:
// the drop-in library, API calls without CollectiveOptions::key). A key made of a buffer's
// address and length stands for that memory only while the memory holds that buffer: a call on
// a buffer that overlaps a recorded one but is not it (another start or length) means the memory
// now holds another tensor, and the old key's state would never be used again (a fusion buffer
// reduced at the length of each round's tensors, buffers allocated anew each step). Recording
// each call's range and forgetting the ones it overlaps keeps one state per buffer in use
// instead of one per distinct call: a program that reduced one buffer at a new length each step
// held a residual per step (6 MiB a step for 1 Mi floats under hybrid) until it ran out of
// memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace hycc::policy {

class BufferKeys {
 public:
  // Records that `key` stands for the bytes [data, data + bytes) and returns the keys of the
  // recorded ranges that overlap them and are not this one (their states are stale), which it
  // forgets. An empty range records nothing. Thread-safe.
  std::vector<uint64_t> claim(const void* data, size_t bytes, uint64_t key);

  // Forgets every range and returns their keys.
  std::vector<uint64_t> release();

  // Ranges recorded (for tests).
  size_t size() const;

 private:
  struct Range {
    uintptr_t end;
    uint64_t key;
  };
  mutable std::mutex mutex_;
  std::map<uintptr_t, Range> ranges_;  // by start; pairwise disjoint
};

}  // namespace hycc::policy
