// The CPU's zfp plane coder: the codes of codec/block/zfp_block.h's ComputedPlaneCoder looked up
// in tables built from it, so that coding a bit plane takes no data-dependent branch (the
// computed coder's loops mispredict on every few bits of noisy data). The GPU kernels keep the
// computed coder; tests/unit/zfp_bit_plane_test.cc compares both on every entry.
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "codec/block/zfp_block.h"

namespace hycc::codec::zfp {

class TablePlaneCoder {
 public:
  // The tables of every (n, plane) and (n, window), built once.
  static const TablePlaneCoder& instance();

  // encode_bit_planes joins the codes of this many planes (7 bits at most each) before it checks
  // the budget: 4 for small budgets (a block of zfp:rate=4 needs one or two planes), 8 for
  // large ones.
  static uint32_t planes_per_put(uint32_t budget) { return budget < 32 ? 4 : 8; }

#if defined(__SSE2__)
  // The planes of one block's u[0..4): planes(k) is bit_plane(u, k), as the sign bits of the
  // four values shifted left by 31 - k.
  struct Planes {
    __m128i u;
    uint32_t operator()(uint32_t k) const {
      const __m128i shifted = _mm_sll_epi32(u, _mm_cvtsi32_si128(static_cast<int>(31 - k)));
      return static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(shifted)));
    }
  };
  Planes planes(const uint32_t* u) const {
    return {_mm_loadu_si128(reinterpret_cast<const __m128i*>(u))};
  }
#else
  ComputedPlaneCoder::Planes planes(const uint32_t* u) const { return {u}; }
#endif

  uint32_t encode(uint32_t plane, uint32_t& n, uint32_t& code) const {
    const uint16_t e = encode_[n][plane];
    code = e & 0x7fu;
    // The group tests reach the plane's highest set bit: computed, not looked up, so that the
    // loads of successive planes do not wait for each other.
    const uint32_t reached = bit_width32(plane);
    n = reached > n ? reached : n;
    return (e >> 8) & 0xfu;
  }
  uint32_t decode(uint32_t window, uint32_t& n, uint32_t& plane) const {
    return unpack(decode_[n][window], n, plane);
  }
  uint32_t decode_cut(uint32_t window, uint32_t bits, uint32_t& n, uint32_t& plane) const {
    return unpack(decode_cut_[n][(1u << bits) - 1 + window], n, plane);
  }

 private:
  TablePlaneCoder();

  static uint32_t unpack(uint16_t entry, uint32_t& n, uint32_t& plane) {
    plane = entry & 0xfu;
    n = (entry >> 8) & 7u;
    return (entry >> 4) & 0xfu;
  }
  static uint16_t pack(uint32_t plane, uint32_t used, uint32_t n) {
    return static_cast<uint16_t>(plane | used << 4 | n << 8);
  }

  // Per significant count n (0..4) and plane: code in bits 0-6, length in 8-11 (n after the
  // plane is computed by encode).
  uint16_t encode_[kBlockValues + 1][16];
  // Per n and next 7 bits: plane in bits 0-3, bits used in 4-7, n after the plane in 8-10.
  uint16_t decode_[kBlockValues + 1][1u << kMaxPlaneCodeBits];
  // Per n, the same for the last b (0..6) bits of a budget: b's windows from 2^b - 1 on.
  uint16_t decode_cut_[kBlockValues + 1][(1u << kMaxPlaneCodeBits) - 1];
};

}  // namespace hycc::codec::zfp
