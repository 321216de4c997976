// The pieces of codec/block/quant_block.h that only the CUDA kernels combine differently from
// the CPU codec: the warp's butterfly reduction of key ranges (lane l scans elements l, l + 32,
// ...; empty lanes included) must give the range of a sequential scan, and the kernels' three
// passes (scan, with the warp's special scan of special blocks; headers and codes), replayed here
// on the CPU with the same functions, must write the CPU codec's payload.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "codec/block/quant_block.h"
#include "codec/float_io.h"
#include "hycc/codec.h"
#include "test_util.h"

namespace hycc {
namespace {

using codec::quant::KeyRange;

KeyRange warp_range(const float* x, size_t n) {
  std::array<KeyRange, 32> lanes;
  for (size_t lane = 0; lane < 32; ++lane) {
    for (size_t i = lane; i < n; i += 32) lanes[lane].add(codec::quant::order_key(x[i]));
  }
  for (size_t d = 16; d > 0; d /= 2) {
    std::array<KeyRange, 32> next = lanes;
    for (size_t lane = 0; lane < 32; ++lane) {
      next[lane].merge(lanes[lane ^ d].lo, lanes[lane ^ d].hi);
    }
    lanes = next;
  }
  for (const KeyRange& r : lanes) EXPECT_TRUE(r.lo == lanes[0].lo && r.hi == lanes[0].hi);
  return lanes[0];
}

TEST(QuantBlock, WarpReductionOfKeyRangesEqualsTheSequentialScan) {
  const std::vector<float> values = test::data_with_specials(5000, 3);
  for (size_t n : {1, 2, 7, 8, 31, 32, 33, 64, 100, 4096}) {
    for (size_t begin = 0; begin + n <= values.size(); begin += 997) {
      const KeyRange expected = codec::quant::key_range(values.data() + begin, n);
      const KeyRange got = warp_range(values.data() + begin, n);
      EXPECT_EQ(got.lo, expected.lo) << n << " " << begin;
      EXPECT_EQ(got.hi, expected.hi) << n << " " << begin;
    }
  }
}

// The warp's special scan: lane l scans elements l, l + 32, ..., merged by butterfly.
codec::quant::SpecialScan warp_special(const float* x, size_t n) {
  std::array<codec::quant::SpecialScan, 32> lanes;
  for (size_t lane = 0; lane < 32; ++lane) {
    for (size_t i = lane; i < n; i += 32) lanes[lane].add(x[i]);
  }
  for (size_t d = 16; d > 0; d /= 2) {
    std::array<codec::quant::SpecialScan, 32> next = lanes;
    for (size_t lane = 0; lane < 32; ++lane) next[lane].merge(lanes[lane ^ d]);
    lanes = next;
  }
  return lanes[0];
}

// codec/cuda/quant_kernels.cu's encoder, one block at a time instead of one warp per block.
std::vector<std::byte> replay_device_encoder(int bits, size_t block, bool stochastic,
                                             ConstTensorView in, uint64_t seed) {
  namespace q = codec::quant;
  const q::PayloadLayout g(in.count, block, bits);
  const float max_code = static_cast<float>((1u << bits) - 1);
  std::vector<float> x(in.count);
  codec::load_as_float(in, 0, in.count, x.data());
  // Pass 1: per block quantization, and a special block's coding.
  std::vector<q::BlockQuant> quants(g.blocks);
  std::vector<q::SpecialQuant> specials(g.blocks);
  for (size_t b = 0; b < g.blocks; ++b) {
    quants[b] = q::quant_from_keys(warp_range(x.data() + b * block, g.elements(b)), max_code);
    if (quants[b].special) {
      specials[b] =
          q::choose_special(warp_special(x.data() + b * block, g.elements(b)), (1u << bits) - 1);
    }
  }
  std::vector<std::byte> out(g.bytes);
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  const uint64_t key = q::noise_key(seed);
  // Pass 2: headers and codes, a lane per word.
  for (size_t b = 0; b < g.blocks; ++b) {
    const size_t begin = b * block, n = g.elements(b), n8 = q::round_up8(n);
    uint8_t* header = p + g.header_offset(b);
    uint8_t* codes = p + g.codes_offset(b);
    if (quants[b].special) {
      const q::SpecialQuant& sq = specials[b];
      std::memcpy(header, &sq.min, 4);
      std::memcpy(header + 4, &sq.scale_bits, 4);
      const q::SegmentLayout layout(bits, n8);
      const auto code_of = [&](size_t i) -> uint32_t {
        if (i >= n) return 0;
        return stochastic
                   ? q::special_code<true>(x[begin + i], sq, q::stochastic_noise(key, begin + i))
                   : q::special_code<false>(x[begin + i], sq, 0.0f);
      };
      for (size_t j = 0; j < layout.len; ++j) layout.put_word(j, code_of, codes);
      continue;
    }
    std::memcpy(header, &quants[b].min, 4);
    std::memcpy(header + 4, &quants[b].scale, 4);
    struct Values {
      const float* x;
      size_t n;
      float pad;
      float operator[](size_t i) const { return i < n ? x[i] : pad; }
    };
    const Values values{x.data() + begin, n, quants[b].min};
    const auto noise = [key, begin](size_t i) { return q::stochastic_noise(key, begin + i); };
    const auto word = [&](auto bits_constant) {
      constexpr int kBits = decltype(bits_constant)::value;
      const size_t len = n8 / q::Packing<kBits>::kPer;
      for (size_t j = 0; j < len; ++j) {
        if (stochastic) {
          q::quantize_word<kBits, true>(values, len, j, quants[b], noise, codes);
        } else {
          q::quantize_word<kBits, false>(values, len, j, quants[b], noise, codes);
        }
      }
    };
    switch (bits) {
      case 1:
        word(std::integral_constant<int, 1>{});
        break;
      case 2:
        word(std::integral_constant<int, 2>{});
        break;
      case 3:
        word(std::integral_constant<int, 3>{});
        break;
      case 4:
        word(std::integral_constant<int, 4>{});
        break;
      case 5:
        word(std::integral_constant<int, 5>{});
        break;
      case 6:
        word(std::integral_constant<int, 6>{});
        break;
      case 7:
        word(std::integral_constant<int, 7>{});
        break;
      default:
        word(std::integral_constant<int, 8>{});
        break;
    }
  }
  return out;
}

// codec/cuda/quant_kernels.cu's decoder on a valid payload: every block from its offsets.
std::vector<float> replay_device_decoder(int bits, size_t block, std::span<const std::byte> payload,
                                         DType dtype, size_t count) {
  namespace q = codec::quant;
  const q::PayloadLayout g(count, block, bits);
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  const size_t elem = dtype_size(dtype);
  test::Buffer out(dtype, count);
  std::vector<float> block_values(block);
  for (size_t b = 0; b < g.blocks; ++b) {
    const size_t begin = b * block, n = g.elements(b), n8 = q::round_up8(n);
    float lo, scale;
    std::memcpy(&lo, p + g.header_offset(b), 4);
    std::memcpy(&scale, p + g.header_offset(b) + 4, 4);
    uint32_t scale_bits;
    std::memcpy(&scale_bits, &scale, 4);
    float* y = block_values.data();
    const uint8_t* codes = p + g.codes_offset(b);
    if ((scale_bits & q::kSpecialBit) != 0) {
      q::SpecialHeader h;
      uint32_t min_bits;
      std::memcpy(&min_bits, &lo, 4);
      EXPECT_TRUE(q::read_special(min_bits, scale_bits, (1u << bits) - 1, h));
      const q::SegmentLayout layout(bits, n8);
      for (size_t i = 0; i < n; ++i) y[i] = q::special_value(layout.code(codes, i), h);
      codec::store_from_float(y, n, out.view(), begin);
      continue;
    }
    const auto store = [y, n](size_t i, float v) {
      if (i < n) y[i] = v;
    };
    const auto word = [&](auto bits_constant) {
      constexpr int kBits = decltype(bits_constant)::value;
      const size_t len = n8 / q::Packing<kBits>::kPer;
      for (size_t j = 0; j < len; ++j) q::dequantize_word<kBits>(codes, len, j, lo, scale, store);
    };
    switch (bits) {
      case 1:
        word(std::integral_constant<int, 1>{});
        break;
      case 2:
        word(std::integral_constant<int, 2>{});
        break;
      case 3:
        word(std::integral_constant<int, 3>{});
        break;
      case 4:
        word(std::integral_constant<int, 4>{});
        break;
      case 5:
        word(std::integral_constant<int, 5>{});
        break;
      case 6:
        word(std::integral_constant<int, 6>{});
        break;
      case 7:
        word(std::integral_constant<int, 7>{});
        break;
      default:
        word(std::integral_constant<int, 8>{});
        break;
    }
    codec::store_from_float(y, n, out.view(), begin);
  }
  std::vector<float> result(count * elem / 4 + 1, 0.0f);
  std::memcpy(result.data(), out.data(), count * elem);
  return result;
}

TEST(QuantBlock, ReplayedDeviceCodecMatchesTheCpuCodec) {
  std::vector<float> values = test::data_with_specials(3001, 8);
  values.back() = NAN;  // the last, partial block is special
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const test::Buffer in = test::Buffer::from_floats(dtype, values);
    for (int bits = 1; bits <= 8; ++bits) {
      for (size_t block : {size_t{8}, size_t{64}, size_t{72}, size_t{1024}}) {
        for (bool stochastic : {false, true}) {
          const std::string spec = "quant:bits=" + std::to_string(bits) +
                                   ",block=" + std::to_string(block) +
                                   (stochastic ? ",round=stochastic" : "");
          const std::vector<std::byte> stream =
              compress(CodecConfig::parse(spec), in.view(), CompressOptions{7});
          const std::span<const std::byte> expected = stream_payload(stream);
          const std::vector<std::byte> got =
              replay_device_encoder(bits, block, stochastic, in.view(), 7);
          ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin(), expected.end()))
              << spec << " " << dtype_name(dtype);
          test::Buffer cpu_out(dtype, values.size());
          decompress(stream, cpu_out.view());
          std::vector<float> cpu_bits(values.size() * dtype_size(dtype) / 4 + 1, 0.0f);
          std::memcpy(cpu_bits.data(), cpu_out.data(), values.size() * dtype_size(dtype));
          const std::vector<float> replayed =
              replay_device_decoder(bits, block, expected, dtype, values.size());
          ASSERT_EQ(std::memcmp(replayed.data(), cpu_bits.data(), cpu_bits.size() * 4), 0)
              << spec << " " << dtype_name(dtype);
        }
      }
    }
  }
}

}  // namespace
}  // namespace hycc
