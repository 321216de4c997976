#include "walk_bench.h"

#include <cstdio>
#include <span>

#include "codec/block/eb_stages.h"
#include "codec/block/mpc_stages.h"
#include "codec/block/zfp_accuracy_stages.h"
#include "codec/chain_walk_replay.h"
#include "codec/float_io.h"
#include "codec/params_io.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "hycc/error.h"

namespace hycc::bench {
namespace {

namespace chain = codec::chain;

// One row: the parallel walk of `c` beside the reference's offsets; same_result(result) tells
// whether its result is the reference's.
template <class Chain, class SameResult>
bool print_row(const std::string& spec, size_t payload_bytes, const Chain& c,
               const std::vector<uint64_t>& ref_offsets, SameResult same_result) {
  const chain::Replay<Chain> r = chain::replay_parallel_walk(c, Chain::kChunk);
  const chain::Geometry& g = r.stats.geometry;
  const uint64_t parallel = 2 * r.stats.longest_chain + g.supers + g.per_super;
  const bool same = same_result(r.result) && r.offsets == ref_offsets && r.stats.final_chunks == 1;
  std::printf("%-26s %11.1f %10lu %10lu x %-4u %9lu %10lu %9.0fx %13.1f %5s\n", spec.c_str(),
              static_cast<double>(payload_bytes) / (1 << 20),
              static_cast<unsigned long>(c.records()), static_cast<unsigned long>(g.chunks),
              g.entries, static_cast<unsigned long>(c.records()),
              static_cast<unsigned long>(parallel),
              static_cast<double>(c.records()) / static_cast<double>(parallel),
              static_cast<double>(r.stats.chain_steps) / static_cast<double>(c.records()),
              same ? "yes" : "NO");
  return same;
}

bool walk_eb(const std::string& spec, std::span<const std::byte> payload, DType dtype,
             size_t count) {
  codec::eb::DecodeGeometry g;
  g.blocks = reinterpret_cast<const uint8_t*>(payload.data()) + codec::eb::kPreambleBytes;
  g.bytes = payload.size() - codec::eb::kPreambleBytes;
  g.count = count;
  g.nblocks = (count + codec::eb::kBlockValues - 1) / codec::eb::kBlockValues;
  g.dtype = dtype;
  std::vector<uint64_t> offsets(g.nblocks, ~uint64_t{0});
  const codec::eb::WalkResult ref = codec::eb::walk_stage(g, offsets.data());
  return print_row(spec, payload.size(), codec::eb::EbChain{g}, offsets,
                   [&](const codec::eb::WalkResult& w) {
                     return w.error == ref.error && w.end == ref.end && w.block == ref.block;
                   });
}

template <typename Word>
bool walk_mpc(const std::string& spec, std::span<const std::byte> payload, size_t count) {
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  const uint64_t groups = codec::mpc::groups_of(count, codec::mpc::kBits<Word>);
  std::vector<uint64_t> offsets(groups, ~uint64_t{0});
  const codec::mpc::WalkResult ref =
      codec::mpc::walk_stage<Word>(p, payload.size(), groups, offsets.data());
  const codec::mpc::MpcChain<Word> c{p, payload.size(), groups};
  return print_row(spec, payload.size(), c, offsets, [&](const codec::mpc::WalkResult& w) {
    return w.error == ref.error && w.end == ref.end && w.group == ref.group;
  });
}

bool walk_zfp(const CodecConfig& config, std::span<const std::byte> payload, size_t count) {
  const codec::zfp::AccuracyChain c{
      reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
      (count + codec::zfp::kBlockValues - 1) / codec::zfp::kBlockValues,
      static_cast<int32_t>(codec::get_u32(config.codec().params(), 4))};
  std::vector<uint64_t> offsets(c.blocks, ~uint64_t{0});
  const codec::zfp::AccuracyWalk ref = c.walk_from(0, 0, offsets.data());
  return print_row(config.spec(), payload.size(), c, offsets,
                   [&](const codec::zfp::AccuracyWalk& w) {
                     return w.past_end == ref.past_end && w.end == ref.end;
                   });
}

bool is_zfp_accuracy(const CodecConfig& config) {
  return config.id() == CodecId::kZfp && codec::get_u8(config.codec().params(), 0) == 2;
}

}  // namespace

int run_walk_bench(const WalkBenchOptions& o) {
  const DType dtype = parse_dtype(o.dtype);
  const std::vector<std::string> specs =
      o.codecs.empty() ? std::vector<std::string>{"eb:abs=1e-3", "eb:abs=1e-6", "mpc"} : o.codecs;
  std::vector<CodecConfig> configs;
  for (const std::string& s : specs) {
    configs.push_back(CodecConfig::parse(s));
    if (configs.back().id() != CodecId::kEb && configs.back().id() != CodecId::kMpc &&
        !is_zfp_accuracy(configs.back())) {
      throw InvalidArgument(
          tagged("bench walk", "'", s, "' is not an eb, mpc or zfp:accuracy spec"));
    }
  }
  const std::vector<float> values = make_data(parse_data_kind(o.data), o.count, o.seed);
  std::vector<uint64_t> storage((o.count * dtype_size(dtype) + 7) / 8);
  const TensorView input{dtype, o.count, storage.data()};
  codec::store_from_float(values.data(), o.count, input, 0);

  std::printf(
      "# hycc-bench walk: %zu %s values (%s); chunks of %u bytes (eb), %u words (mpc), "
      "%u bits (zfp:accuracy)\n",
      o.count, o.dtype.c_str(), o.data.c_str(), codec::eb::EbChain::kChunk,
      codec::mpc::MpcChain<uint32_t>::kChunk, codec::zfp::AccuracyChain::kChunk);
  std::printf(
      "# longest sequential part in steps: the one-thread walk's (one per block), the "
      "parallel walk's (2 x longest chunk chain + super-chunks + chunks per super-chunk)\n");
  std::printf("%-26s %11s %10s %17s %9s %10s %10s %13s %5s\n", "codec", "payload_MiB", "blocks",
              "chunks x entries", "reference", "parallel", "shorter", "steps/block", "same");
  bool all_same = true;
  for (const CodecConfig& config : configs) {
    const std::vector<std::byte> stream = compress(config, input);
    const std::span<const std::byte> payload = stream_payload(stream);
    if (config.id() == CodecId::kEb) {
      all_same &= walk_eb(config.spec(), payload, dtype, o.count);
    } else if (config.id() == CodecId::kZfp) {
      all_same &= walk_zfp(config, payload, o.count);
    } else if (dtype == DType::kF32) {
      all_same &= walk_mpc<uint32_t>(config.spec(), payload, o.count);
    } else {
      all_same &= walk_mpc<uint16_t>(config.spec(), payload, o.count);
    }
  }
  return all_same ? 0 : 1;
}

}  // namespace hycc::bench
