// The device decomposition of codec "mpc": per-group stages of the CUDA kernels
// (src/codec/cuda/mpc_kernels.cu), each a function of a group index, so that a plain loop over
// the groups on the host (tests/unit/mpc_stages_test.cc) runs exactly what the kernels run.
//
// Encoding:
//   1. encode: per group, its bytes into a fixed-capacity slot of scratch ((W + 1) words) and its
//      size;
//   2. an exclusive scan of the sizes gives every group its offset;
//   3. compact: per group, its bytes from the slot to its offset.
// Decoding:
//   1. walk: each group's offset (a group's size is 1 + popcount(bitmap) words; where group g
//      starts takes the bitmaps of all groups before): the parallel walk of
//      codec/block/chain_walk.h over MpcChain, or the reference walk_stage (one thread following
//      the bitmaps);
//   2. decode: per group, its W deltas d[i] = w[i] - w[i - dim] (mod 2^W), checked, as 32-bit
//      values;
//   3. the deltas summed along each stride: dim = 1 is one inclusive scan; for dim > 1 the
//      elements of each residue class i mod dim are gathered into a run of their own (gather),
//      one inclusive scan covers all runs, and each element subtracts the sum before its run
//      (scatter). Sums modulo 2^32 truncate to sums modulo 2^W.
#pragma once

#include <cstdint>
#include <cstring>

#include "codec/block/mpc_block.h"
#include "common/host_device.h"

namespace hycc::codec::mpc {

template <typename Word>
HYCC_HD inline constexpr uint64_t slot_bytes() {
  return (kBits<Word> + 1) * sizeof(Word);
}

HYCC_HD inline uint64_t groups_of(uint64_t count, int bits) { return (count + bits - 1) / bits; }

// Encoding, stage 1.
template <typename Word>
HYCC_HD inline void encode_stage(const Word* w, uint64_t count, uint32_t dim, uint64_t g,
                                 uint8_t* slots, uint64_t* sizes) {
  uint8_t* slot = slots + g * slot_bytes<Word>();
  sizes[g] = static_cast<uint64_t>(encode_group(w, count, dim, g, slot) - slot);
}

// Encoding, stage 3.
template <typename Word>
HYCC_HD inline void compact_stage(const uint8_t* slots, const uint64_t* offsets,
                                  const uint64_t* sizes, uint64_t g, uint8_t* out) {
  std::memcpy(out + offsets[g], slots + g * slot_bytes<Word>(), sizes[g]);
}

struct WalkResult {
  GroupError error = GroupError::kNone;
  uint64_t group = 0;  // the malformed group
  uint64_t end = 0;    // where the last group ends
};

// The checked walk from group `first` at byte `start` to the last group: offsets[g] of every
// group it reads.
template <typename Word>
HYCC_HD inline WalkResult walk_from(const uint8_t* payload, uint64_t bytes, uint64_t groups,
                                    uint64_t first, uint64_t start, uint64_t* offsets) {
  WalkResult r;
  r.end = start;
  for (uint64_t g = first; g < groups; ++g) {
    if (bytes - r.end < sizeof(Word)) {
      r.error = GroupError::kNoBitmap;
      r.group = g;
      return r;
    }
    const uint64_t size = group_bytes(load_word<Word>(payload + r.end));
    if (bytes - r.end < size) {
      r.error = GroupError::kShort;
      r.group = g;
      return r;
    }
    offsets[g] = r.end;
    r.end += size;
  }
  return r;
}

// Decoding, stage 1, the reference (one thread): offsets[g] of every group. The device runs the
// parallel walk of codec/block/chain_walk.h over MpcChain, which gives the same.
template <typename Word>
HYCC_HD inline WalkResult walk_stage(const uint8_t* payload, uint64_t bytes, uint64_t groups,
                                     uint64_t* offsets) {
  return walk_from<Word>(payload, bytes, groups, 0, 0, offsets);
}

// The groups of a payload (a whole number of words) as a chain for the parallel walk (units:
// words; offsets in bytes).
template <typename Word>
struct MpcChain {
  using Result = WalkResult;
  static constexpr uint32_t kChunk = 4096;
  const uint8_t* payload = nullptr;
  uint64_t bytes = 0;
  uint64_t groups = 0;

  HYCC_HD uint64_t units() const { return bytes / sizeof(Word); }
  HYCC_HD uint64_t records() const { return groups; }
  HYCC_HD uint32_t longest() const { return slot_bytes<Word>() / sizeof(Word); }
  HYCC_HD uint32_t record_units(uint64_t pos) const {
    const uint64_t at = pos * sizeof(Word);
    const uint64_t size = group_bytes(load_word<Word>(payload + at));
    return bytes - at < size ? 0 : static_cast<uint32_t>(size / sizeof(Word));
  }
  HYCC_HD WalkResult walk_from(uint64_t first, uint64_t pos, uint64_t* offsets) const {
    return mpc::walk_from<Word>(payload, bytes, groups, first, pos * sizeof(Word), offsets);
  }
  HYCC_HD uint64_t offset(uint64_t pos) const { return pos * sizeof(Word); }
};

// Decoding, stage 2: the deltas of group g's elements below count into deltas[i].
template <typename Word>
HYCC_HD inline GroupError decode_stage(const uint8_t* payload, uint64_t bytes, uint64_t count,
                                       const uint64_t* offsets, uint64_t g, uint32_t* deltas) {
  Word d[kBits<Word>];
  size_t group_size = 0;
  const GroupError error =
      decode_group(payload + offsets[g], bytes - offsets[g], count, g, d, group_size);
  if (error != GroupError::kNone) return error;
  for (int k = 0; k < kBits<Word>; ++k) {
    const uint64_t i = g * kBits<Word> + k;
    if (i < count) deltas[i] = d[k];
  }
  return GroupError::kNone;
}

// Where element i goes when the residue classes mod dim are laid out one after another: class r
// holds count / dim elements, plus one if r < count % dim.
HYCC_HD inline uint64_t run_start(uint64_t count, uint32_t dim, uint64_t r) {
  const uint64_t extra = count % dim;
  return r * (count / dim) + (r < extra ? r : extra);
}
HYCC_HD inline uint64_t run_position(uint64_t count, uint32_t dim, uint64_t i) {
  return run_start(count, dim, i % dim) + i / dim;
}

// Decoding, stage 3 for dim > 1: gather before the scan.
HYCC_HD inline void gather_stage(const uint32_t* deltas, uint64_t count, uint32_t dim, uint64_t i,
                                 uint32_t* runs) {
  runs[run_position(count, dim, i)] = deltas[i];
}

// Decoding, stage 3, after the inclusive scan `sums` (of the runs, or of the deltas for
// dim = 1): element i.
template <typename Word>
HYCC_HD inline void scatter_stage(const uint32_t* sums, uint64_t count, uint32_t dim, uint64_t i,
                                  Word* out) {
  if (dim == 1) {
    out[i] = static_cast<Word>(sums[i]);
    return;
  }
  const uint64_t start = run_start(count, dim, i % dim);
  const uint32_t before = start == 0 ? 0u : sums[start - 1];
  out[i] = static_cast<Word>(sums[run_position(count, dim, i)] - before);
}

}  // namespace hycc::codec::mpc
