#include "common/xxh3.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>  // renames XXH3_64bits and friends to their _dispatch versions
#endif

#include <new>

namespace hycc {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx"))) void zero_upper_avx() { __builtin_ia32_vzeroupper(); }
void clear_upper_vector_state() {
  static const bool has_avx = __builtin_cpu_supports("avx");
  if (has_avx) zero_upper_avx();
}
#else
void clear_upper_vector_state() {}
#endif

}  // namespace

uint64_t xxh3(const void* data, size_t bytes) {
  const uint64_t h = XXH3_64bits(data, bytes);
  clear_upper_vector_state();
  return h;
}

uint64_t xxh3_seeded(const void* data, size_t bytes, uint64_t seed) {
  const uint64_t h = XXH3_64bits_withSeed(data, bytes, seed);
  clear_upper_vector_state();
  return h;
}

Xxh3Stream::Xxh3Stream() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state_);
}

Xxh3Stream::~Xxh3Stream() { XXH3_freeState(state_); }

void Xxh3Stream::update(const void* data, size_t bytes) {
  XXH3_64bits_update(state_, data, bytes);
  clear_upper_vector_state();
}

uint64_t Xxh3Stream::digest() const {
  const uint64_t h = XXH3_64bits_digest(state_);
  clear_upper_vector_state();
  return h;
}

}  // namespace hycc
