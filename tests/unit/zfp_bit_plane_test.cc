// zfp's embedded coding of a block's bit planes (codec/block/zfp_block.h: one code per plane,
// computed by the GPU's ComputedPlaneCoder or looked up by the CPU's TablePlaneCoder) against the
// plain bit-by-bit loops of libzfp's encode_few_ints / decode_few_ints, kept here as the
// reference: every combination of the top four planes of a block under many budgets and lowest
// planes, and every 16-bit start of a stream likewise, with both coders. The libzfp tests
// (zfp_fixed_rate_test.cc, zfp_fixed_accuracy_test.cc) compare whole streams on real data.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "codec/block/zfp_block.h"
#include "codec/zfp_plane_table.h"

namespace hycc {
namespace {

namespace zfp = codec::zfp;

// libzfp's encode_few_ints for 4 values, one bit per call.
template <class Writer>
void reference_encode(const uint32_t* u, uint32_t budget, Writer& out, uint32_t kmin) {
  uint32_t bits = budget;
  uint32_t n = 0;
  for (uint32_t k = 32; bits != 0 && k-- > kmin;) {
    uint64_t x = 0;
    for (uint32_t i = 0; i < 4; ++i) x += uint64_t{(u[i] >> k) & 1u} << i;
    const uint32_t m = n < bits ? n : bits;
    bits -= m;
    out.put(x, m);
    x >>= m;
    for (; bits != 0 && n < 4; x >>= 1, ++n) {
      --bits;
      const bool any = x != 0;
      out.put(any ? 1u : 0u, 1);
      if (!any) break;
      for (; bits != 0 && n < 3; x >>= 1, ++n) {
        --bits;
        const auto bit = static_cast<uint32_t>(x & 1u);
        out.put(bit, 1);
        if (bit) break;
      }
    }
  }
}

// libzfp's decode_few_ints for 4 values, one bit per call.
template <class Reader>
void reference_decode(Reader& in, uint32_t budget, uint32_t* u, uint32_t kmin) {
  for (uint32_t i = 0; i < 4; ++i) u[i] = 0;
  uint32_t bits = budget;
  uint32_t n = 0;
  for (uint32_t k = 32; bits != 0 && k-- > kmin;) {
    const uint32_t m = n < bits ? n : bits;
    bits -= m;
    uint64_t x = in.take(m);
    while (n < 4 && bits != 0) {
      --bits;
      if (!in.take(1)) break;
      while (n < 3 && bits != 0) {
        --bits;
        if (in.take(1)) break;
        ++n;
      }
      x += uint64_t{1} << n;
      ++n;
    }
    for (uint32_t i = 0; x != 0; ++i, x >>= 1) u[i] += static_cast<uint32_t>(x & 1u) << k;
  }
}

// The top four planes of u from 16 bits (value i's plane 31 - p is bit 4 p + i), the planes below
// them from `low`.
void spread_planes(uint32_t pattern, uint32_t low, uint32_t* u) {
  for (uint32_t i = 0; i < 4; ++i) {
    u[i] = low >> (7 * i) & 0x0fffffffu;
    for (uint32_t p = 0; p < 4; ++p) u[i] |= ((pattern >> (4 * p + i)) & 1u) << (31 - p);
  }
}

template <class PlaneCoder>
void expect_encoding_matches_the_reference(const PlaneCoder& coder) {
  std::mt19937 rng(7);
  for (uint32_t pattern = 0; pattern < (1u << 16); ++pattern) {
    uint32_t u[4];
    spread_planes(pattern, static_cast<uint32_t>(rng()), u);
    for (uint32_t kmin : {0u, 20u, 29u}) {
      for (uint32_t budget : {0u, 1u, 2u, 3u, 5u, 7u, 8u, 11u, 15u, 23u, 55u, 119u, 131u}) {
        zfp::WideBlockBits ours, theirs;
        zfp::WideBitWriter ours_out(ours), theirs_out(theirs);
        zfp::encode_bit_planes(u, budget, ours_out, kmin, coder);
        reference_encode(u, budget, theirs_out, kmin);
        ASSERT_EQ(ours_out.position(), theirs_out.position())
            << "pattern " << pattern << " budget " << budget << " kmin " << kmin;
        for (int w = 0; w < 3; ++w) {
          ASSERT_EQ(ours.w[w], theirs.w[w])
              << "pattern " << pattern << " budget " << budget << " kmin " << kmin;
        }
      }
    }
  }
}

template <class PlaneCoder>
void expect_decoding_matches_the_reference(const PlaneCoder& coder) {
  std::mt19937_64 rng(11);
  for (uint32_t start = 0; start < (1u << 16); ++start) {
    zfp::WideBlockBits stream;
    stream.w[0] = (rng() << 16) | start;
    stream.w[1] = rng();
    stream.w[2] = rng();
    for (uint32_t kmin : {0u, 24u, 30u}) {
      for (uint32_t budget :
           {0u, 1u, 4u, 6u, 7u, 8u, 9u, 13u, 16u, 23u, 31u, 32u, 55u, 119u, 131u}) {
        zfp::WideBitReader ours_in(stream), theirs_in(stream);
        uint32_t ours[4], theirs[4];
        zfp::decode_bit_planes(ours_in, budget, ours, kmin, coder);
        reference_decode(theirs_in, budget, theirs, kmin);
        ASSERT_EQ(ours_in.position(), theirs_in.position())
            << "start " << start << " budget " << budget << " kmin " << kmin;
        for (int i = 0; i < 4; ++i) {
          ASSERT_EQ(ours[i], theirs[i])
              << "start " << start << " budget " << budget << " kmin " << kmin << " value " << i;
        }
      }
    }
  }
}

TEST(ZfpBitPlanes, ComputedEncodingMatchesTheBitByBitLoop) {
  expect_encoding_matches_the_reference(zfp::ComputedPlaneCoder{});
}

TEST(ZfpBitPlanes, TableEncodingMatchesTheBitByBitLoop) {
  expect_encoding_matches_the_reference(zfp::TablePlaneCoder::instance());
}

TEST(ZfpBitPlanes, ComputedDecodingMatchesTheBitByBitLoop) {
  expect_decoding_matches_the_reference(zfp::ComputedPlaneCoder{});
}

TEST(ZfpBitPlanes, TableDecodingMatchesTheBitByBitLoop) {
  expect_decoding_matches_the_reference(zfp::TablePlaneCoder::instance());
}

// Every entry of the tables is the computed coder's answer.
TEST(ZfpBitPlanes, TableHoldsTheComputedCodes) {
  const zfp::ComputedPlaneCoder computed;
  const auto& table = zfp::TablePlaneCoder::instance();
  for (uint32_t n0 = 0; n0 <= 4; ++n0) {
    for (uint32_t plane = 0; plane < 16; ++plane) {
      uint32_t n1 = n0, n2 = n0, code1 = 0, code2 = 0;
      ASSERT_EQ(table.encode(plane, n1, code1), computed.encode(plane, n2, code2));
      ASSERT_EQ(code1, code2) << "n " << n0 << " plane " << plane;
      ASSERT_EQ(n1, n2) << "n " << n0 << " plane " << plane;
    }
    for (uint32_t window = 0; window < 128; ++window) {
      uint32_t n1 = n0, n2 = n0, plane1 = 0, plane2 = 0;
      ASSERT_EQ(table.decode(window, n1, plane1), computed.decode(window, n2, plane2));
      ASSERT_EQ(plane1, plane2) << "n " << n0 << " window " << window;
      ASSERT_EQ(n1, n2) << "n " << n0 << " window " << window;
    }
    for (uint32_t bits = 0; bits < 7; ++bits) {
      for (uint32_t window = 0; window < (1u << bits); ++window) {
        uint32_t n1 = n0, n2 = n0, plane1 = 0, plane2 = 0;
        ASSERT_EQ(table.decode_cut(window, bits, n1, plane1),
                  computed.decode_cut(window, bits, n2, plane2));
        ASSERT_EQ(plane1, plane2) << "n " << n0 << " bits " << bits << " window " << window;
        ASSERT_EQ(n1, n2) << "n " << n0 << " bits " << bits << " window " << window;
      }
    }
  }
}

// The fixed-rate reader (BlockBitReader, 128 bits) as well: a round trip of random blocks at
// every budget decodes as the reference decodes.
TEST(ZfpBitPlanes, FixedRateBlocksDecodeAsTheReference) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20000; ++trial) {
    zfp::BlockBits bits;
    bits.lo = rng();
    bits.hi = rng() >> (trial % 64);
    for (uint32_t budget = 0; budget <= 119; budget += 1 + trial % 5) {
      zfp::BlockBitReader ours_in(bits), theirs_in(bits);
      uint32_t ours[4], theirs[4];
      zfp::decode_bit_planes(ours_in, budget, ours, 0, zfp::TablePlaneCoder::instance());
      reference_decode(theirs_in, budget, theirs, 0);
      for (int i = 0; i < 4; ++i) ASSERT_EQ(ours[i], theirs[i]) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace hycc
