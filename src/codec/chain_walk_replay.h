// The parallel walk (codec/block/chain_walk.h) run on the CPU as src/codec/cuda/parallel_walk.cu
// launches it, every kernel a loop over its chunks, super-chunks or entries (run backwards, so
// that no stage can lean on their order), with step counts: for the tests that compare it with
// the reference walk, and for `hycc-bench walk`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "codec/block/chain_walk.h"

namespace hycc::codec::chain {

struct ReplayStats {
  Geometry geometry;
  uint64_t longest_chain = 0;  // steps of the longest entry chain through one chunk's table
  uint64_t chain_steps = 0;    // steps of all entry chains together
  int final_chunks = 0;        // chunks that ended the walk (exactly one)
};

template <class Chain>
struct Replay {
  typename Chain::Result result{};
  std::vector<uint64_t> offsets;  // ~0 where the walk wrote nothing
  ReplayStats stats;
};

template <class Chain>
Replay<Chain> replay_parallel_walk(const Chain& c, uint32_t chunk) {
  const Geometry g = Geometry::of(c.units(), c.records(), chunk, c.longest());
  Replay<Chain> r;
  r.stats.geometry = g;
  std::vector<uint16_t> next(chunk);
  const auto fill_next = [&](uint64_t k) {
    for (uint32_t p = chunk; p-- > 0;) next[p] = next_stage(c, g, k, p);
  };
  std::vector<Map> maps(g.chunks * g.entries), super_maps(g.supers * g.entries);
  for (uint64_t k = g.chunks; k-- > 0;) {
    fill_next(k);
    for (uint32_t e = g.entries; e-- > 0;) {
      const Map m = follow_stage(next.data(), g, e);
      maps[k * g.entries + e] = m;
      r.stats.longest_chain = std::max<uint64_t>(r.stats.longest_chain, m.count + 1);
      r.stats.chain_steps += m.count + 1;
    }
  }
  for (uint64_t i = g.supers * g.entries; i-- > 0;) {
    super_maps[i] =
        compose_stage(maps.data(), g, i / g.entries, static_cast<uint32_t>(i % g.entries));
  }
  std::vector<Start> super_starts(g.supers), starts(g.chunks);
  place_stage(super_maps.data(), g, super_starts.data());
  for (uint64_t s = g.supers; s-- > 0;) {
    place_chunks_stage(maps.data(), g, s, super_starts.data(), starts.data());
  }
  r.offsets.assign(c.records(), ~uint64_t{0});
  for (uint64_t k = g.chunks; k-- > 0;) {
    if (starts[k].reach == Reach::kUnreached) continue;
    r.stats.final_chunks += starts[k].reach == Reach::kFinal ? 1 : 0;
    fill_next(k);
    rewalk_stage(c, next.data(), g, k, starts.data(), r.offsets.data(), &r.result);
  }
  return r;
}

}  // namespace hycc::codec::chain
