// The parallel walk (codec/block/chain_walk.h) replayed on the CPU as src/codec/cuda/
// parallel_walk.cu launches it (codec/chain_walk_replay.h): for "eb" blocks and "mpc" groups it
// must give the reference walk's result (error, record, end) and offsets, for the CPU codecs'
// payloads, the same payloads damaged (flipped bytes, cut short, with bytes appended), garbage
// and the longest records, at chunk sizes from the shortest allowed (the longest record) up.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "codec/block/chain_walk.h"
#include "codec/block/eb_stages.h"
#include "codec/block/mpc_stages.h"
#include "codec/chain_walk_replay.h"
#include "hycc/codec.h"
#include "stage_test_data.h"
#include "test_util.h"

namespace hycc {
namespace {

namespace chain = codec::chain;
namespace eb = codec::eb;
namespace mpc = codec::mpc;

template <class Chain>
chain::Replay<Chain> parallel_walk(const Chain& c, uint32_t chunk) {
  EXPECT_TRUE(chain::Geometry::valid(chunk, c.longest()));
  chain::Replay<Chain> r = chain::replay_parallel_walk(c, chunk);
  EXPECT_EQ(r.stats.final_chunks, 1) << "exactly one chunk ends the walk";
  return r;
}

// Offsets of the records the walk parsed: all of them, or those before the malformed one.
std::vector<uint64_t> parsed(std::vector<uint64_t> offsets, bool failed, uint64_t record) {
  if (failed) offsets.resize(record);
  return offsets;
}

// Trial t's damage to a payload of `word`-byte units: a flipped byte, cut short at a unit, up to
// `max_append` units appended, or `other` (t % 4 == 3) at a random unit.
std::vector<uint8_t> damage(std::vector<uint8_t> p, int trial, size_t word, size_t max_append,
                            std::mt19937_64& rng,
                            const std::function<void(std::vector<uint8_t>&, size_t)>& other) {
  const size_t at = rng() % (p.size() / word) * word;
  switch (trial % 4) {
    case 0:
      p[at] ^= static_cast<uint8_t>(1 + rng() % 255);
      break;
    case 1:
      p.resize(at);
      break;
    case 2:
      p.insert(p.end(), word * (1 + rng() % max_append), static_cast<uint8_t>(rng()));
      break;
    default:
      other(p, at);
  }
  return p;
}

// ---- eb --------------------------------------------------------------------------------------

eb::DecodeGeometry eb_geometry(const std::vector<uint8_t>& blocks, DType dtype, uint64_t count) {
  eb::DecodeGeometry g;
  g.blocks = blocks.data();
  g.bytes = blocks.size();
  g.count = count;
  g.nblocks = (count + eb::kBlockValues - 1) / eb::kBlockValues;
  g.dtype = dtype;
  return g;
}

// The parallel walk at several chunk sizes against the reference, for the blocks of `count`
// values of `dtype` in `blocks` (a payload after its preamble, valid or not).
void expect_eb_walks_agree(const std::vector<uint8_t>& blocks, DType dtype, uint64_t count) {
  const eb::DecodeGeometry g = eb_geometry(blocks, dtype, count);
  std::vector<uint64_t> expected(g.nblocks, ~uint64_t{0});
  const eb::WalkResult ref = eb::walk_stage(g, expected.data());
  const bool failed = ref.error != eb::BlockError::kNone;
  const eb::EbChain c{g};
  for (const uint32_t chunk :
       {c.longest(), c.longest() + 1, 2 * c.longest() + 7, 4096u, eb::EbChain::kChunk}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const chain::Replay<eb::EbChain> w = parallel_walk(c, chunk);
    ASSERT_EQ(w.result.error, ref.error) << eb::describe(w.result.error);
    EXPECT_EQ(w.result.end, ref.end);
    if (failed) {
      EXPECT_EQ(w.result.block, ref.block);
    }
    EXPECT_EQ(parsed(w.offsets, failed, ref.block), parsed(expected, failed, ref.block));
  }
}

std::vector<uint8_t> eb_blocks(const std::string& spec, DType dtype, const std::string& kind,
                               size_t count) {
  const test::Buffer in = test::Buffer::from_floats(dtype, test::stage_data(kind, count));
  const std::vector<std::byte> stream = compress(CodecConfig::parse(spec), in.view());
  const std::span<const std::byte> payload = stream_payload(stream);
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  return std::vector<uint8_t>(p + eb::kPreambleBytes, p + payload.size());
}

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

TEST(ChainWalkEb, CpuPayloadsGiveTheReferenceOffsets) {
  for (const DType dtype : kDTypes) {
    for (const char* spec : {"eb:abs=1e-3", "eb:rel=1e-4", "eb:abs=1e-7"}) {
      for (const char* kind : test::kStageData) {
        for (const size_t count : {1ul, 64ul, 65ul, 4097ul, 200003ul}) {
          SCOPED_TRACE(std::string(spec) + " " + std::string(dtype_name(dtype)) + " " + kind + " " +
                       std::to_string(count));
          expect_eb_walks_agree(eb_blocks(spec, dtype, kind, count), dtype, count);
        }
      }
    }
  }
}

TEST(ChainWalkEb, DamagedPayloadsGiveTheReferenceError) {
  std::mt19937_64 rng(11);
  for (const DType dtype : kDTypes) {
    const size_t count = 30011;
    const std::vector<uint8_t> valid = eb_blocks("eb:abs=1e-4", dtype, "gaussian", count);
    for (int trial = 0; trial < 40; ++trial) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " trial " + std::to_string(trial));
      const std::vector<uint8_t> damaged =
          damage(valid, trial, 1, 600, rng, [&](std::vector<uint8_t>& d, size_t at) {
            for (size_t i = at; i < d.size() && i < at + 64; ++i)
              d[i] = static_cast<uint8_t>(rng());
          });
      expect_eb_walks_agree(damaged, dtype, count);
    }
  }
}

TEST(ChainWalkEb, GarbageGivesTheReferenceError) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<uint8_t> garbage(1 + rng() % 20000);
    for (uint8_t& b : garbage) b = static_cast<uint8_t>(rng());
    if (trial % 2 == 0) {
      // Mostly valid-looking headers: width 0..8 blocks with a one-byte base.
      for (size_t i = 0; i + 1 < garbage.size(); i += 2) {
        garbage[i] = static_cast<uint8_t>(rng() % 2);
        garbage[i + 1] = static_cast<uint8_t>(rng() % 128);
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_eb_walks_agree(garbage, kDTypes[trial % 3], 64 * (1 + rng() % 3000));
  }
}

// The longest block parse_block accepts: width 32, a 5-byte base, 64 outliers in a bitmap.
std::vector<uint8_t> longest_block(uint32_t elem) {
  std::vector<uint8_t> b = {
      static_cast<uint8_t>(32 | eb::kOutlierFlag), 0xff, 0xff, 0xff, 0xff, 0x0f, 64};
  b.insert(b.end(), 8, 0xff);
  b.insert(b.end(), 64 * elem + 64 * 4, 0x5a);
  return b;
}

TEST(ChainWalkEb, LongestBlocksReachTheBoundAndWalk) {
  for (const DType dtype : kDTypes) {
    const uint32_t elem = eb::element_bytes(dtype);
    const std::vector<uint8_t> one = longest_block(elem);
    eb::BlockLayout layout;
    ASSERT_EQ(eb::parse_block(one.data(), one.size(), eb::kBlockValues, elem, layout),
              eb::BlockError::kNone);
    EXPECT_EQ(layout.bytes, eb::max_block_bytes(elem));
    // Longest blocks between one-value verbatim blocks: every exit offset of a chunk occurs.
    std::vector<uint8_t> blocks;
    uint64_t n = 0;
    for (int i = 0; i < 300; ++i, ++n) {
      if (i % 3 == 0) {
        blocks.push_back(eb::kVerbatimWidth);
        blocks.insert(blocks.end(), 64 * elem, static_cast<uint8_t>(i % 251));
      } else {
        blocks.insert(blocks.end(), one.begin(), one.end());
      }
    }
    expect_eb_walks_agree(blocks, dtype, n * eb::kBlockValues);
  }
}

// Random blocks of every shape parse_block accepts (any width, base length, outlier layout).
TEST(ChainWalkEb, NoAcceptedBlockIsLongerThanTheBound) {
  std::mt19937_64 rng(13);
  std::vector<uint8_t> bytes(2048);
  int accepted = 0;
  for (int trial = 0; trial < 100000; ++trial) {
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    size_t at = 1;
    const size_t base_bytes = 1 + rng() % eb::kMaxVarintBytes;
    for (size_t i = 0; i + 1 < base_bytes; ++i) bytes[at++] |= 0x80;
    bytes[at++] = static_cast<uint8_t>(1 + rng() % 15);
    const uint64_t bitmap = rng();
    bytes[at++] = static_cast<uint8_t>(std::popcount(bitmap));
    std::memcpy(&bytes[at], &bitmap, 8);
    bytes[0] = static_cast<uint8_t>(rng() % 33 | (rng() % 2 ? eb::kDeltaFlag : 0) |
                                    (rng() % 4 ? eb::kOutlierFlag : 0));
    if (rng() % 8 == 0) bytes[0] = eb::kVerbatimWidth;
    for (const uint32_t elem : {2u, 4u}) {
      eb::BlockLayout layout;
      if (eb::parse_block(bytes.data(), bytes.size(), eb::kBlockValues, elem, layout) ==
          eb::BlockError::kNone) {
        ++accepted;
        ASSERT_LE(layout.bytes, eb::max_block_bytes(elem));
      }
    }
  }
  EXPECT_GT(accepted, 10000);
}

// ---- mpc -------------------------------------------------------------------------------------

template <typename Word>
void expect_mpc_walks_agree(const std::vector<uint8_t>& payload, uint64_t count) {
  const uint64_t groups = mpc::groups_of(count, mpc::kBits<Word>);
  ASSERT_EQ(payload.size() % sizeof(Word), 0u);
  std::vector<uint64_t> expected(groups, ~uint64_t{0});
  const mpc::WalkResult ref =
      mpc::walk_stage<Word>(payload.data(), payload.size(), groups, expected.data());
  const bool failed = ref.error != mpc::GroupError::kNone;
  const mpc::MpcChain<Word> c{payload.data(), payload.size(), groups};
  for (const uint32_t chunk :
       {c.longest(), c.longest() + 1, 3 * c.longest() + 2, 1000u, mpc::MpcChain<Word>::kChunk}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const chain::Replay<mpc::MpcChain<Word>> w = parallel_walk(c, chunk);
    ASSERT_EQ(w.result.error, ref.error) << mpc::describe(w.result.error);
    EXPECT_EQ(w.result.end, ref.end);
    if (failed) {
      EXPECT_EQ(w.result.group, ref.group);
    }
    EXPECT_EQ(parsed(w.offsets, failed, ref.group), parsed(expected, failed, ref.group));
  }
}

std::vector<uint8_t> mpc_payload(DType dtype, int dim, const std::string& kind, size_t count) {
  const test::Buffer in = test::Buffer::from_floats(dtype, test::stage_data(kind, count));
  const std::vector<std::byte> stream =
      compress(CodecConfig::parse("mpc:dim=" + std::to_string(dim)), in.view());
  const std::span<const std::byte> payload = stream_payload(stream);
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  return std::vector<uint8_t>(p, p + payload.size());
}

void expect_mpc_walks_agree(DType dtype, const std::vector<uint8_t>& payload, uint64_t count) {
  if (dtype == DType::kF32) {
    expect_mpc_walks_agree<uint32_t>(payload, count);
  } else {
    expect_mpc_walks_agree<uint16_t>(payload, count);
  }
}

TEST(ChainWalkMpc, CpuPayloadsGiveTheReferenceOffsets) {
  for (const DType dtype : kDTypes) {
    for (const int dim : {1, 3}) {
      for (const char* kind : test::kStageData) {
        for (const size_t count : {1ul, 32ul, 33ul, 4097ul, 200003ul}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim) + " " + kind +
                       " " + std::to_string(count));
          expect_mpc_walks_agree(dtype, mpc_payload(dtype, dim, kind, count), count);
        }
      }
    }
  }
}

TEST(ChainWalkMpc, DamagedPayloadsAndGarbageGiveTheReferenceError) {
  std::mt19937_64 rng(14);
  for (const DType dtype : kDTypes) {
    const size_t word = dtype_size(dtype);
    const size_t count = 50021;
    const std::vector<uint8_t> valid = mpc_payload(dtype, 1, "gaussian", count);
    for (int trial = 0; trial < 40; ++trial) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " trial " + std::to_string(trial));
      const std::vector<uint8_t> damaged =
          damage(valid, trial, word, 80, rng, [&](std::vector<uint8_t>& d, size_t) {
            d.assign(word * (1 + rng() % 20000), 0);
            for (uint8_t& b : d) b = static_cast<uint8_t>(rng() & rng());
          });
      expect_mpc_walks_agree(dtype, damaged, count);
    }
  }
}

TEST(ChainWalkMpc, IncompressibleGroupsAreTheLongest) {
  std::mt19937_64 rng(15);
  for (const DType dtype : kDTypes) {
    std::vector<float> noise(64 * 1000 + 5);
    for (float& x : noise) {
      const uint32_t bits = static_cast<uint32_t>(rng());
      std::memcpy(&x, &bits, 4);
    }
    const test::Buffer in = test::Buffer::from_floats(dtype, noise);
    const std::vector<std::byte> stream = compress(CodecConfig::parse("mpc"), in.view());
    const std::span<const std::byte> payload = stream_payload(stream);
    const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
    expect_mpc_walks_agree(dtype, std::vector<uint8_t>(p, p + payload.size()), noise.size());
  }
}

}  // namespace
}  // namespace hycc
