// XXH3-64 from libxxhash (Debian's libxxhash-dev), through its x86 dispatcher where there is
// one: Debian's plain entry points use SSE2 (about 21 GB/s on a core), the dispatched ones the
// widest vector unit the CPU has (AVX-512: about 90 GB/s). The dispatched code returns without
// clearing the upper halves of the vector registers, which makes the SSE code that runs next
// several times slower on CPUs that track them (quant's decoder fell from 20 to 8 GB/s), so every
// call here ends with vzeroupper where the CPU has AVX.
#pragma once

#include <cstddef>
#include <cstdint>

struct XXH3_state_s;  // libxxhash's streaming state

namespace hycc {

uint64_t xxh3(const void* data, size_t bytes);
uint64_t xxh3_seeded(const void* data, size_t bytes, uint64_t seed);

// XXH3-64 of a sequence of pieces: the same value as xxh3() of their concatenation.
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;

  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  XXH3_state_s* state_;
};

}  // namespace hycc
