// The interface of a fuzz target: libFuzzer's entry point, the seeds it starts from, and the
// check that stops a run when a property fails. Each target is built twice: with libFuzzer
// (tools/fuzz, clang) to search, and with fuzz_replay_main.cc (any compiler) to replay its seeds,
// deterministic mutations of them and the saved regressions in every test run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace hycc::fuzz {

using Bytes = std::vector<uint8_t>;

// Valid (or nearly valid) inputs that reach deep into the target's code.
std::vector<Bytes> seeds();

// A failed property: print what failed and stop the process, so the fuzzer keeps the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// Reads an input from its front: the fuzzer steers what the target does with these bytes.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(byte()) << (8 * i);
    return v;
  }
  // The bytes not read yet.
  Bytes rest() const { return Bytes(data_ + pos_, data_ + size_); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace hycc::fuzz
