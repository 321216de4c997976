// Where every record of a payload starts, found in parallel. The records of "eb" (blocks) and
// "mpc" (groups) have variable sizes and no size table: where record r starts takes the sizes of
// all records before it. One thread walking them (each codec's walk_stage, the reference) is one
// dependent read per record, about a million for 256 MiB of float32: far too slow on a GPU.
// The parallel walk, without a format change:
//
//   1. map: the payload (`units` long, in bytes or words) is cut into chunks of C units, plus
//      one that holds position `units`. The first record starting in a chunk starts at some
//      entry e < E units into it (E: the longest record). Per chunk, the size of a full record
//      at every position is parsed once (next), then for every entry e the chain of records is
//      followed through that table to the chunk's end: where it leaves the chunk (exit, units
//      into the next chunk) and how many records start in the chunk (count), or that it meets a
//      malformed record (dead). Map = (exit, count) per chunk and entry.
//   2. compose: per super-chunk of S chunks (S about the square root of the chunks) and entry,
//      its chunk maps one after another: the super-chunk's map.
//   3. place: one thread follows the super-chunk maps from entry 0 of chunk 0: every super-chunk
//      the chain reaches gets its entry and its first record index (base), up to the final one,
//      where the chain dies or the last record starts.
//   4. place chunks: per super-chunk, its chunk maps from its entry: every chunk's entry, base
//      and whether it is the final chunk.
//   5. rewalk: per chunk the chain reaches, the next table again, the chain followed from the
//      chunk's entry writing each record's offset; the final chunk ends with the checked walk
//      (the reference's loop, from that record on), which parses the last record with its true
//      length (the last block of "eb" may hold fewer values) or reports the malformed record.
//
// Every record but the last parses as a full record, so the chain of the maps is the
// reference's chain, and the final walk gives the reference's result (error, record, end) and
// offsets. The longest sequential part is a chunk's chain (C / record size steps) plus S steps
// twice, against one step per record.
//
// A Chain (eb::EbChain, mpc::MpcChain) provides: units(), records() (at least 1), longest() (E),
// record_units(pos) (the size of a full record at pos < units(), 0 if malformed),
// walk_from(first, pos, offsets) (the checked walk from record `first` at `pos`, returning the
// codec's WalkResult) and offset(pos) (pos in the unit of the offsets).
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace hycc::codec::chain {

inline constexpr uint16_t kDeadNext = 0xffff;   // next table: a malformed record at this position
inline constexpr uint32_t kDead = 0xffffffffu;  // Map::exit of a chain that met a malformed record

struct Geometry {
  uint64_t units = 0;
  uint64_t records = 0;
  uint32_t chunk = 0;    // C, at least E, and C + E < kDeadNext
  uint32_t entries = 0;  // E
  uint64_t chunks = 0;   // units / C + 1
  uint64_t per_super = 0;
  uint64_t supers = 0;

  HYCC_HD static Geometry of(uint64_t units, uint64_t records, uint32_t chunk, uint32_t entries) {
    Geometry g;
    g.units = units;
    g.records = records;
    g.chunk = chunk;
    g.entries = entries;
    g.chunks = units / chunk + 1;
    uint64_t s = 1;
    while (s * s < g.chunks) ++s;
    g.per_super = s;
    g.supers = (g.chunks + s - 1) / s;
    return g;
  }
  HYCC_HD static constexpr bool valid(uint32_t chunk, uint32_t entries) {
    return entries >= 1 && chunk >= entries && chunk + entries < kDeadNext;
  }
};

struct Map {
  uint32_t exit = 0;   // units into the next chunk, or kDead
  uint32_t count = 0;  // records starting in the chunk(s) before the exit or the malformed one
};

enum class Reach : uint32_t { kUnreached, kPassing, kFinal };

struct Start {
  uint64_t base = 0;  // index of the first record starting here
  uint32_t entry = 0;
  Reach reach = Reach::kUnreached;
};

// Stage 1a: the next table of chunk c at position p (units into the chunk).
template <class Chain>
HYCC_HD inline uint16_t next_stage(const Chain& chain, const Geometry& g, uint64_t c, uint32_t p) {
  const uint64_t pos = c * g.chunk + p;
  const uint32_t size = pos < g.units ? chain.record_units(pos) : 0;
  return size == 0 ? kDeadNext : static_cast<uint16_t>(p + size);
}

// Stage 1b: the map of a chunk (its next table) for entry e.
HYCC_HD inline Map follow_stage(const uint16_t* next, const Geometry& g, uint32_t e) {
  uint32_t pos = e;
  uint32_t count = 0;
  while (pos < g.chunk) {
    if (next[pos] == kDeadNext) return {kDead, count};
    pos = next[pos];
    ++count;
  }
  return {pos - g.chunk, count};
}

// Stage 2: the map of super-chunk s for entry e (maps: chunk c's entry e at c * E + e).
HYCC_HD inline Map compose_stage(const Map* maps, const Geometry& g, uint64_t s, uint32_t e) {
  Map m{e, 0};
  const uint64_t end = (s + 1) * g.per_super < g.chunks ? (s + 1) * g.per_super : g.chunks;
  for (uint64_t c = s * g.per_super; c < end; ++c) {
    const Map& step = maps[c * g.entries + m.exit];
    m.count += step.count;
    m.exit = step.exit;
    if (m.exit == kDead) break;
  }
  return m;
}

// Follows `n` maps (map i of entry e at maps[i * E + e]) from `from`, writing each one's Start;
// those after the final one are unreached.
HYCC_HD inline void place_along(const Map* maps, const Geometry& g, uint64_t n, Start from,
                                Start* starts) {
  for (uint64_t i = 0; i < n; ++i) {
    starts[i] = from;
    if (from.reach != Reach::kPassing) continue;
    const Map& m = maps[i * g.entries + from.entry];
    if (m.exit == kDead || from.base + m.count >= g.records) {
      starts[i].reach = Reach::kFinal;
      from.reach = Reach::kUnreached;
      continue;
    }
    from.base += m.count;
    from.entry = m.exit;
  }
}

// Stage 3 (one thread): every super-chunk's Start.
HYCC_HD inline void place_stage(const Map* super_maps, const Geometry& g, Start* super_starts) {
  Start first;
  first.reach = Reach::kPassing;
  place_along(super_maps, g, g.supers, first, super_starts);
}

// Stage 4: the Starts of super-chunk s's chunks.
HYCC_HD inline void place_chunks_stage(const Map* maps, const Geometry& g, uint64_t s,
                                       const Start* super_starts, Start* starts) {
  const uint64_t first = s * g.per_super;
  const uint64_t n = first + g.per_super < g.chunks ? g.per_super : g.chunks - first;
  Start from = super_starts[s];
  if (from.reach == Reach::kFinal) from.reach = Reach::kPassing;  // its final chunk is inside
  place_along(maps + first * g.entries, g, n, from, starts + first);
}

// Stage 5: chunk c's records (its next table, its Start) into offsets; the final chunk also
// writes the walk's result.
template <class Chain>
HYCC_HD inline void rewalk_stage(const Chain& chain, const uint16_t* next, const Geometry& g,
                                 uint64_t c, const Start* starts, uint64_t* offsets,
                                 typename Chain::Result* result) {
  const Start& s = starts[c];
  if (s.reach == Reach::kUnreached) return;
  uint64_t record = s.base;
  uint32_t pos = s.entry;
  while (pos < g.chunk && record + 1 < g.records && next[pos] != kDeadNext) {
    offsets[record++] = chain.offset(c * g.chunk + pos);
    pos = next[pos];
  }
  if (s.reach == Reach::kFinal) *result = chain.walk_from(record, c * g.chunk + pos, offsets);
}

}  // namespace hycc::codec::chain
