// The device decomposition of "eb" (codec/block/eb_stages.h) replayed on the CPU: the launchers
// of src/codec/cuda/eb_kernels.cu with every kernel a loop over its blocks (run backwards, so
// that no stage can lean on the order of blocks) and every CUB scan a sequential one. The
// replayed payload must be the CPU codec's payload bit for bit, and the replayed decode the CPU
// decode, for every dtype, bound mode, data kind and the sizes around a block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "codec/block/eb_stages.h"
#include "codec/block/quant_block.h"
#include "codec/eb_reference.h"
#include "codec/params_io.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "stage_test_data.h"
#include "test_util.h"

namespace hycc {
namespace {

using codec::eb::BlockSummary;
using codec::eb::CarryEffect;
namespace eb = codec::eb;

// eb_finite_range: order-key min/max and the first finite element, as range_kernel reduces them.
eb::Quantizer replay_quantizer(const CodecConfig& config, ConstTensorView in) {
  const CodecParams p = config.codec().params();
  const double value = codec::get_f64(p, 8);
  if (codec::get_u8(p, 0) == 0) return eb::make_quantizer(value, 0.0f);
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  uint64_t first = ~uint64_t{0};
  for (uint64_t i = in.count; i-- > 0;) {
    const float x = eb::load_element(in.data, in.dtype, i);
    if (!codec::quant::is_finite(x)) continue;
    lo = std::min(lo, codec::quant::order_key(x));
    hi = std::max(hi, codec::quant::order_key(x));
    first = std::min(first, i);
  }
  const bool any = first != ~uint64_t{0};
  const double bound = any ? eb::relative_bound(value, codec::quant::from_order_key(lo),
                                                codec::quant::from_order_key(hi))
                           : 0.0;
  return eb::make_quantizer(bound,
                            bound > 0 || !any ? 0.0f : eb::load_element(in.data, in.dtype, first));
}

std::vector<std::byte> replay_encode(const eb::Quantizer& qz, ConstTensorView in) {
  if (in.count == 0) return {};
  const auto g = eb::EncodeGeometry::of(qz, in.data, in.dtype, in.count);
  std::vector<BlockSummary> summaries(g.blocks);
  std::vector<int32_t> carries(g.blocks);
  std::vector<uint64_t> sizes(g.blocks), offsets(g.blocks);
  for (uint64_t b = g.blocks; b-- > 0;) eb::summarize_stage(g, b, summaries.data());
  for (uint64_t b = g.blocks; b-- > 0;) {
    eb::resolve_stage(g, b, summaries.data(), carries.data(), sizes.data());
  }
  uint64_t sum = 0;
  for (uint64_t b = 0; b < g.blocks; ++b) {
    offsets[b] = sum;
    sum += sizes[b];
  }
  std::vector<std::byte> payload(eb::kPreambleBytes + sum);
  auto* out = reinterpret_cast<uint8_t*>(payload.data());
  for (uint64_t b = g.blocks; b-- > 0;) eb::write_stage(g, b, carries.data(), offsets.data(), out);
  std::memcpy(out, &qz.bound, 8);
  std::memcpy(out + 8, &qz.step, 8);
  return payload;
}

void replay_decode(std::span<const std::byte> payload, TensorView out) {
  if (out.count == 0) return;
  double preamble[2];
  std::memcpy(preamble, payload.data(), 16);
  eb::DecodeGeometry g;
  g.blocks = reinterpret_cast<const uint8_t*>(payload.data()) + eb::kPreambleBytes;
  g.bytes = payload.size() - eb::kPreambleBytes;
  g.count = out.count;
  g.nblocks = (out.count + eb::kBlockValues - 1) / eb::kBlockValues;
  g.dtype = out.dtype;
  g.step = preamble[1];
  std::vector<uint64_t> offsets(g.nblocks);
  const eb::WalkResult walk = eb::walk_stage(g, offsets.data());
  if (walk.error != eb::BlockError::kNone || walk.end != g.bytes) {
    throw CorruptStream(tagged("replay", eb::describe(walk.error)));
  }
  std::vector<CarryEffect> effects(g.nblocks), carries(g.nblocks);
  for (uint64_t b = g.nblocks; b-- > 0;) eb::effect_stage(g, b, offsets.data(), effects.data());
  CarryEffect running;  // exclusive scan from "the carry is 0"
  for (uint64_t b = 0; b < g.nblocks; ++b) {
    carries[b] = running;
    running = CarryEffect::then(running, effects[b]);
  }
  for (uint64_t b = g.nblocks; b-- > 0;) {
    eb::decode_stage(g, b, offsets.data(), carries.data(), out.data);
  }
}

const char* const kSpecs[] = {"eb:abs=1e-3", "eb:rel=1e-4", "eb:abs=1e-6", "eb:abs=0.5",
                              "eb:rel=1e-2"};
const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
const size_t kCounts[] = {0, 1, 63, 64, 65, 4097, 1000003};

using Param = std::tuple<const char*, DType, size_t, const char*>;
class EbStages : public ::testing::TestWithParam<Param> {};

TEST_P(EbStages, ReplayGivesTheCpuPayloadAndDecode) {
  const auto& [spec, dtype, count, data] = GetParam();
  const CodecConfig config = CodecConfig::parse(spec);
  for (const std::string& kind : test::stage_kinds(data)) {
    SCOPED_TRACE(kind);
    const test::Buffer in = test::Buffer::from_floats(dtype, test::stage_data(kind, count));
    const std::vector<std::byte> stream = compress(config, in.view());
    const std::span<const std::byte> expected = stream_payload(stream);

    const std::vector<std::byte> replayed =
        replay_encode(replay_quantizer(config, in.view()), in.view());
    ASSERT_EQ(replayed.size(), expected.size());
    ASSERT_TRUE(std::equal(replayed.begin(), replayed.end(), expected.begin()))
        << "replayed payload differs from the CPU payload";

    test::Buffer cpu_out(dtype, count), replay_out(dtype, count);
    decompress(stream, cpu_out.view());
    replay_decode(expected, replay_out.view());
    EXPECT_TRUE(replay_out.bits_equal(cpu_out)) << "replayed decode differs from the CPU decode";
  }
}

std::string name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [spec, dtype, count, data] = info.param;
  std::string s = std::string(spec) + "_" + std::string(dtype_name(dtype)) + "_" +
                  std::to_string(count) + "_" + data;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

// Every data kind at the sizes around a block; the large size for three kinds.
INSTANTIATE_TEST_SUITE_P(Small, EbStages,
                         ::testing::Combine(::testing::ValuesIn(kSpecs),
                                            ::testing::ValuesIn(kDTypes),
                                            ::testing::ValuesIn(kCounts, kCounts + 6),
                                            ::testing::Values("all")),
                         name);
INSTANTIATE_TEST_SUITE_P(
    Large, EbStages,
    ::testing::Combine(::testing::Values("eb:abs=1e-3", "eb:rel=1e-4", "eb:abs=1e-6"),
                       ::testing::ValuesIn(kDTypes), ::testing::Values(kCounts[6]),
                       ::testing::Values("specials", "smooth", "denormals")),
    name);

// Carries across runs: blocks that are not coded for every carry (leading outliers, verbatim
// blocks) sit between anchors; the replay must chain them as the CPU does.
TEST(EbStagesCarry, RunsBetweenAnchorsChainAsTheCpuDoes) {
  std::vector<float> v = test::stage_data("smooth", 64 * 40 + 17);
  for (size_t b = 0; b < 40; b += 3) v[b * 64] = std::nanf("");              // a leading outlier
  for (size_t i = 64 * 7; i < 64 * 9; ++i) v[i] = (i % 2 ? 1e30f : -1e30f);  // verbatim-ish
  for (DType dtype : kDTypes) {
    const CodecConfig config = CodecConfig::parse("eb:abs=1e-5");
    const test::Buffer in = test::Buffer::from_floats(dtype, v);
    const std::vector<std::byte> stream = compress(config, in.view());
    const std::span<const std::byte> expected = stream_payload(stream);
    const std::vector<std::byte> replayed =
        replay_encode(replay_quantizer(config, in.view()), in.view());
    ASSERT_EQ(replayed.size(), expected.size()) << dtype_name(dtype);
    EXPECT_TRUE(std::equal(replayed.begin(), replayed.end(), expected.begin()))
        << dtype_name(dtype);
  }
}

// The generic packer the device runs for every block equals the unrolled full-block packer of
// the CPU (which the payload tests above exercise through the CPU codec) for every width.
TEST(EbStagesPacking, GenericPackAndUnpackRoundTripEveryWidth) {
  for (unsigned width = 0; width <= 32; ++width) {
    for (uint32_t n : {1u, 7u, 63u, 64u}) {
      uint32_t values[64], back[64];
      for (uint32_t i = 0; i < n; ++i) {
        values[i] = width == 0
                        ? 0
                        : static_cast<uint32_t>((0x9e3779b97f4a7c15ull * (i + 1)) >> (64 - width));
      }
      uint8_t packed[64 * 4 + 8] = {};
      const uint8_t* end = eb::pack_values(values, n, width, packed);
      ASSERT_EQ(static_cast<size_t>(end - packed), (n * width + 7) / 8);
      eb::unpack_values(packed, n, width, back);
      for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(back[i], values[i]) << width << " " << n;
    }
  }
}

}  // namespace
}  // namespace hycc
