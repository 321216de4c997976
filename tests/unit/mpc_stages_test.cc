// The device decomposition of "mpc" (codec/block/mpc_stages.h) replayed on the CPU: the
// launchers of src/codec/cuda/mpc_kernels.cu with every kernel a loop over its groups or elements
// (run backwards, so that no stage can lean on their order) and every CUB scan a sequential one.
// The replayed payload must be the CPU codec's payload bit for bit, and the replayed decode the
// CPU decode, for every dtype, several strides, every data kind and the sizes around a group.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "codec/block/mpc_stages.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "stage_test_data.h"
#include "test_util.h"

namespace hycc {
namespace {

namespace mpc = codec::mpc;

std::vector<uint64_t> exclusive_sum(const std::vector<uint64_t>& v) {
  std::vector<uint64_t> out(v.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    out[i] = sum;
    sum += v[i];
  }
  return out;
}

template <typename Word>
std::vector<std::byte> replay_encode(const Word* w, uint64_t count, uint32_t dim) {
  const uint64_t groups = mpc::groups_of(count, mpc::kBits<Word>);
  if (groups == 0) return {};
  std::vector<uint8_t> slots(groups * mpc::slot_bytes<Word>());
  std::vector<uint64_t> sizes(groups);
  for (uint64_t g = groups; g-- > 0;)
    mpc::encode_stage(w, count, dim, g, slots.data(), sizes.data());
  const std::vector<uint64_t> offsets = exclusive_sum(sizes);
  std::vector<std::byte> payload(offsets.back() + sizes.back());
  for (uint64_t g = groups; g-- > 0;) {
    mpc::compact_stage<Word>(slots.data(), offsets.data(), sizes.data(), g,
                             reinterpret_cast<uint8_t*>(payload.data()));
  }
  return payload;
}

template <typename Word>
void replay_decode(std::span<const std::byte> payload, uint64_t count, uint32_t dim, Word* out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(payload.data());
  const uint64_t groups = mpc::groups_of(count, mpc::kBits<Word>);
  if (groups == 0) return;
  std::vector<uint64_t> offsets(groups);
  const mpc::WalkResult walk = mpc::walk_stage<Word>(bytes, payload.size(), groups, offsets.data());
  if (walk.error != mpc::GroupError::kNone || walk.end != payload.size()) {
    throw CorruptStream(tagged("replay", mpc::describe(walk.error)));
  }
  std::vector<uint32_t> deltas(count), runs(count), sums(count);
  for (uint64_t g = groups; g-- > 0;) {
    const mpc::GroupError e =
        mpc::decode_stage<Word>(bytes, payload.size(), count, offsets.data(), g, deltas.data());
    if (e != mpc::GroupError::kNone) throw CorruptStream(tagged("replay", mpc::describe(e)));
  }
  const std::vector<uint32_t>* scanned = &deltas;
  if (dim > 1) {
    for (uint64_t i = count; i-- > 0;) mpc::gather_stage(deltas.data(), count, dim, i, runs.data());
    scanned = &runs;
  }
  uint32_t sum = 0;
  for (uint64_t i = 0; i < count; ++i) sums[i] = sum += (*scanned)[i];
  for (uint64_t i = count; i-- > 0;) mpc::scatter_stage(sums.data(), count, dim, i, out);
}

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
const int kDims[] = {1, 2, 3, 8, 64};
const size_t kCounts[] = {0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 4097, 1000003};

using Param = std::tuple<DType, int, size_t, const char*>;
class MpcStages : public ::testing::TestWithParam<Param> {};

TEST_P(MpcStages, ReplayGivesTheCpuPayloadAndDecode) {
  const auto& [dtype, dim, count, data] = GetParam();
  const CodecConfig config = CodecConfig::parse("mpc:dim=" + std::to_string(dim));
  const auto d = static_cast<uint32_t>(dim);
  for (const std::string& kind : test::stage_kinds(data)) {
    SCOPED_TRACE(kind);
    const test::Buffer in = test::Buffer::from_floats(dtype, test::stage_data(kind, count));
    const std::vector<std::byte> stream = compress(config, in.view());
    const std::span<const std::byte> expected = stream_payload(stream);

    test::Buffer replay_out(dtype, count);
    std::vector<std::byte> replayed;
    if (dtype == DType::kF32) {
      replayed = replay_encode(static_cast<const uint32_t*>(in.view().data), count, d);
      replay_decode(expected, count, d, static_cast<uint32_t*>(replay_out.data()));
    } else {
      replayed = replay_encode(static_cast<const uint16_t*>(in.view().data), count, d);
      replay_decode(expected, count, d, static_cast<uint16_t*>(replay_out.data()));
    }
    ASSERT_EQ(replayed.size(), expected.size());
    ASSERT_TRUE(std::equal(replayed.begin(), replayed.end(), expected.begin()))
        << "replayed payload differs from the CPU payload";
    // mpc is lossless: the replayed decode is the input, bit for bit.
    EXPECT_TRUE(replay_out.bits_equal(in)) << "replayed decode differs from the input";
  }
}

std::string name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [dtype, dim, count, data] = info.param;
  return std::string(dtype_name(dtype)) + "_dim" + std::to_string(dim) + "_" +
         std::to_string(count) + "_" + data;
}

INSTANTIATE_TEST_SUITE_P(Small, MpcStages,
                         ::testing::Combine(::testing::ValuesIn(kDTypes),
                                            ::testing::ValuesIn(kDims),
                                            ::testing::ValuesIn(kCounts, kCounts + 12),
                                            ::testing::Values("all")),
                         name);
INSTANTIATE_TEST_SUITE_P(Large, MpcStages,
                         ::testing::Combine(::testing::ValuesIn(kDTypes), ::testing::Values(1, 3),
                                            ::testing::Values(kCounts[12]),
                                            ::testing::Values("specials", "smooth")),
                         name);

// The replayed decoder rejects what the CPU decoder rejects: truncation, trailing bytes, a zero
// word marked present, non-zero padding.
TEST(MpcStagesErrors, ReplayRejectsMalformedPayloads) {
  const size_t count = 1000;
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, test::stage_data("smooth", count));
  const std::vector<std::byte> stream = compress(CodecConfig::parse("mpc"), in.view());
  const std::span<const std::byte> good = stream_payload(stream);
  std::vector<uint32_t> out(count);
  std::vector<std::byte> bad(good.begin(), good.end() - 4);
  EXPECT_THROW(replay_decode<uint32_t>(bad, count, 1, out.data()), CorruptStream);
  bad.assign(good.begin(), good.end());
  bad.resize(bad.size() + 4);
  EXPECT_THROW(replay_decode<uint32_t>(bad, count, 1, out.data()), CorruptStream);
  // A bitmap claiming one more word than there is: the words shift, a zero shows up, or the
  // payload runs short.
  bad.assign(good.begin(), good.end());
  uint32_t bitmap;
  std::memcpy(&bitmap, bad.data(), 4);
  bitmap ^= 0x80000000u;
  std::memcpy(bad.data(), &bitmap, 4);
  EXPECT_THROW(replay_decode<uint32_t>(bad, count, 1, out.data()), CorruptStream);
}

}  // namespace
}  // namespace hycc
