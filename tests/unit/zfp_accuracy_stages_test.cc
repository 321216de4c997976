// The device decomposition of "zfp:accuracy" (codec/block/zfp_accuracy_stages.h) replayed on the
// CPU: the launchers of src/codec/cuda/zfp_accuracy_kernels.cu with every kernel a loop over its
// blocks (run backwards, so that no stage can lean on their order), every scan a sequential one,
// and the walk codec/chain_walk_replay.h. The replayed payload must be the CPU codec's bit for
// bit, the replayed decode the CPU decode; non-finite values are reported (the device then takes
// the host path); damaged payloads are decoded on the device only when they are plain, and then
// as the CPU decodes them.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/block/zfp_accuracy_stages.h"
#include "codec/chain_walk_replay.h"
#include "codec/params_io.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "stage_test_data.h"
#include "test_util.h"

namespace hycc {
namespace {

namespace zfp = codec::zfp;

int minexp_of(const CodecConfig& config) {
  return static_cast<int32_t>(codec::get_u32(config.codec().params(), 4));
}

// The payload, or nothing if some value is not finite.
std::vector<std::byte> replay_encode(int minexp, ConstTensorView in, bool& non_finite) {
  non_finite = false;
  const zfp::AccuracyInput g{in.data, in.dtype, in.count, minexp};
  const uint64_t blocks = g.blocks();
  std::vector<zfp::WideBlockBits> slots(blocks);
  std::vector<uint64_t> sizes(blocks), offsets(blocks);
  for (uint64_t b = blocks; b-- > 0;) {
    non_finite |= zfp::accuracy_encode_stage(g, b, slots.data(), sizes.data()) != 0;
  }
  if (non_finite) return {};
  uint64_t bits = 0;
  for (uint64_t b = 0; b < blocks; ++b) {
    offsets[b] = bits;
    bits += sizes[b];
  }
  std::vector<uint64_t> words((bits + 63) / 64, 0);
  for (uint64_t b = blocks; b-- > 0;) {
    zfp::accuracy_compact_stage(slots.data(), offsets.data(), sizes.data(), b,
                                [&](uint64_t w, uint64_t v) {
                                  ASSERT_LT(w, words.size());
                                  words[w] |= v;
                                });
  }
  std::vector<std::byte> payload((bits + 7) / 8);
  if (!payload.empty()) std::memcpy(payload.data(), words.data(), payload.size());
  return payload;
}

// True and `out` decoded if the payload is plain (as the device decides), false otherwise.
bool replay_decode(int minexp, std::span<const std::byte> payload, TensorView out, uint32_t chunk) {
  const zfp::AccuracyChain c{reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
                             (out.count + zfp::kBlockValues - 1) / zfp::kBlockValues, minexp};
  if (out.count == 0) return payload.empty();
  const codec::chain::Replay<zfp::AccuracyChain> walk =
      codec::chain::replay_parallel_walk(c, chunk);
  EXPECT_EQ(walk.stats.final_chunks, 1);
  // The parallel walk gives the one-thread walk's offsets and end.
  std::vector<uint64_t> ref_offsets(c.blocks, ~uint64_t{0});
  const zfp::AccuracyWalk ref = c.walk_from(0, 0, ref_offsets.data());
  EXPECT_EQ(walk.result.past_end, ref.past_end);
  if (!ref.past_end) {
    EXPECT_EQ(walk.result.end, ref.end);
    EXPECT_EQ(walk.offsets, ref_offsets);
  }
  if (walk.result.past_end || (walk.result.end + 7) / 8 != payload.size()) return false;
  for (uint64_t b = c.blocks; b-- > 0;) {
    zfp::accuracy_decode_stage(c, walk.offsets.data(), b, out.data, out.dtype, out.count);
  }
  return true;
}

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
const char* const kSpecs[] = {"zfp:accuracy=1e-3", "zfp:accuracy=0.5", "zfp:accuracy=1e-30",
                              "zfp:accuracy=1e30"};
const char* const kFiniteKinds[] = {"gaussian", "zeros", "constant", "denormals", "smooth"};

TEST(ZfpAccuracyStages, ReplayGivesTheCpuPayloadAndDecode) {
  for (const char* spec : kSpecs) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (const DType dtype : kDTypes) {
      for (const char* kind : kFiniteKinds) {
        for (const size_t count : {0ul, 1ul, 3ul, 4ul, 5ul, 4097ul, 12003ul}) {
          const std::string what = std::string(spec) + " " + std::string(dtype_name(dtype)) + " " +
                                   kind + " " + std::to_string(count);
          SCOPED_TRACE(what);
          const test::Buffer in = test::Buffer::from_floats(dtype, test::stage_data(kind, count));
          const std::vector<std::byte> stream = compress(config, in.view());
          const std::span<const std::byte> expected = stream_payload(stream);
          bool non_finite = true;
          const std::vector<std::byte> replayed =
              replay_encode(minexp_of(config), in.view(), non_finite);
          ASSERT_FALSE(non_finite);
          ASSERT_EQ(replayed.size(), expected.size());
          ASSERT_TRUE(std::equal(replayed.begin(), replayed.end(), expected.begin()))
              << "replayed payload differs from the CPU payload";

          test::Buffer cpu_out(dtype, count);
          decompress(stream, cpu_out.view());
          for (const uint32_t chunk : {zfp::kMaxAccuracyBlockBits, 16384u}) {
            test::Buffer out(dtype, count);
            ASSERT_TRUE(replay_decode(minexp_of(config), expected, out.view(), chunk));
            EXPECT_TRUE(out.bits_equal(cpu_out)) << "replayed decode differs, chunk " << chunk;
          }
        }
      }
    }
  }
}

TEST(ZfpAccuracyStages, NonFiniteValuesAreReported) {
  const CodecConfig config = CodecConfig::parse("zfp:accuracy=1e-3");
  for (const DType dtype : kDTypes) {
    const test::Buffer in = test::Buffer::from_floats(dtype, test::stage_data("specials", 1001));
    bool non_finite = false;
    replay_encode(minexp_of(config), in.view(), non_finite);
    EXPECT_TRUE(non_finite) << dtype_name(dtype);
  }
}

// A damaged payload is decoded on the device only if it is plain; then the CPU accepts it and
// decodes it alike. Every other one goes to the host path, where the CPU codec decides.
TEST(ZfpAccuracyStages, DamagedPayloadsAreDecodedAsTheCpuDoes) {
  std::mt19937_64 rng(21);
  const CodecConfig config = CodecConfig::parse("zfp:accuracy=1e-4");
  const size_t count = 4001;
  const test::Buffer in = test::Buffer::from_floats(DType::kF32, test::stage_data("smooth", count));
  const std::vector<std::byte> stream = compress(config, in.view());
  const std::span<const std::byte> valid = stream_payload(stream);
  int plain = 0, other = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::vector<std::byte> damaged(valid.begin(), valid.end());
    const size_t at = rng() % damaged.size();
    if (trial % 3 == 0) {
      damaged.resize(at);
    } else if (trial % 3 == 1) {
      damaged.push_back(static_cast<std::byte>(rng()));
    } else {
      damaged[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    test::Buffer cpu_out(DType::kF32, count), out(DType::kF32, count);
    bool cpu_ok = true;
    try {
      config.codec().decode(damaged, cpu_out.view());
    } catch (const CorruptStream&) {
      cpu_ok = false;
    }
    if (replay_decode(minexp_of(config), damaged, out.view(), 2048)) {
      ++plain;
      ASSERT_TRUE(cpu_ok) << "trial " << trial << ": the device accepts what the CPU rejects";
      EXPECT_TRUE(out.bits_equal(cpu_out)) << "trial " << trial;
    } else {
      ++other;
    }
  }
  EXPECT_GT(plain, 10);
  EXPECT_GT(other, 10);
}

}  // namespace
}  // namespace hycc
