// Bit counting shared by the CPU and CUDA paths: <bit> on the host, the CUDA intrinsics in
// device code (the results are the same).
#pragma once

#include <bit>
#include <cstdint>

#include "common/host_device.h"

namespace hycc::codec {

HYCC_HD inline unsigned popcount32(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popc(v));
#else
  return static_cast<unsigned>(std::popcount(v));
#endif
}

HYCC_HD inline unsigned popcount64(uint64_t v) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popcll(v));
#else
  return static_cast<unsigned>(std::popcount(v));
#endif
}

// Index of the lowest set bit; 64 for 0.
HYCC_HD inline unsigned countr_zero64(uint64_t v) {
#if defined(__CUDA_ARCH__)
  return v == 0 ? 64u : static_cast<unsigned>(__ffsll(static_cast<long long>(v)) - 1);
#else
  return static_cast<unsigned>(std::countr_zero(v));
#endif
}

// Number of bits needed to hold values in [0, v].
HYCC_HD inline unsigned bit_width32(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return 32u - static_cast<unsigned>(__clz(v));
#else
  return static_cast<unsigned>(std::bit_width(v));
#endif
}

}  // namespace hycc::codec
