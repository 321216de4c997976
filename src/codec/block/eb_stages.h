// The device decomposition of codec "eb": per-block stages of the CUDA kernels
// (src/codec/cuda/eb_kernels.cu), each a function of a block index, so that a plain loop over the
// blocks on the host (tests/unit/eb_stages_test.cc) runs exactly what the kernels run.
//
// Encoding (the payload after its 16-byte preamble, which the host writes):
//   1. summarize: per block, its quanta, outliers and BlockSummary (independent of the carry);
//   2. resolve: the carries. A block coded whatever its carry ("anchor") passes its own last
//      quantum on, so the blocks after an anchor up to the next one form an independent run: one
//      thread per run walks it, giving each block its carry and its size (plan_block);
//   3. an exclusive scan of the sizes gives every block its offset;
//   4. write: per block, its quanta again and the block at its offset.
//   Sizes are known before anything is written, so there is no scratch copy and no compaction.
// Decoding:
//   1. walk: each block's offset; the blocks have variable sizes and no table, so where block b
//      starts takes the sizes of all blocks before it: the parallel walk of
//      codec/block/chain_walk.h over EbChain, or the reference walk_stage (one thread following
//      the headers with parse_block, which checks everything);
//   2. effect: per block, what it does to the carry (CarryEffect);
//   3. an exclusive scan of the effects gives every block its carry;
//   4. decode: per block, its values at their place.
#pragma once

#include <cstdint>
#include <cstring>

#include "codec/block/eb_block.h"
#include "codec/float_convert.h"
#include "common/host_device.h"
#include "hycc/dtype.h"

namespace hycc::codec::eb {

HYCC_HD inline uint32_t element_bytes(DType dtype) { return dtype == DType::kF32 ? 4u : 2u; }

// Element i of a tensor as float, exactly.
HYCC_HD inline float load_element(const void* in, DType dtype, uint64_t i) {
  if (dtype == DType::kF32) return static_cast<const float*>(in)[i];
  const uint16_t h = static_cast<const uint16_t*>(in)[i];
  return dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

struct EncodeGeometry {
  const void* in = nullptr;
  DType dtype = DType::kF32;
  uint64_t count = 0;
  uint64_t blocks = 0;
  Quantizer qz;

  // `n` values of `type` at `data`, in blocks of kBlockValues (the last one may be shorter).
  static EncodeGeometry of(const Quantizer& q, const void* data, DType type, uint64_t n) {
    EncodeGeometry g;
    g.in = data;
    g.dtype = type;
    g.count = n;
    g.blocks = (n + kBlockValues - 1) / kBlockValues;
    g.qz = q;
    return g;
  }

  HYCC_HD uint32_t values(uint64_t b) const {
    return static_cast<uint32_t>(count - b * kBlockValues < kBlockValues ? count - b * kBlockValues
                                                                         : kBlockValues);
  }
  HYCC_HD const uint8_t* raw(uint64_t b) const {
    return static_cast<const uint8_t*>(in) + b * kBlockValues * element_bytes(dtype);
  }
};

// The quanta of block b (choose_quantum per value) and its summary.
HYCC_HD inline BlockSummary quantize_block(const EncodeGeometry& g, uint64_t b, int32_t* q,
                                           uint64_t& outliers) {
  const uint32_t n = g.values(b);
  outliers = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float x = load_element(g.in, g.dtype, b * kBlockValues + i);
    if (!choose_quantum(x, g.qz, g.dtype, q[i])) outliers |= uint64_t{1} << i;
  }
  return summarize(q, outliers, n);
}

// Stage 1.
HYCC_HD inline void summarize_stage(const EncodeGeometry& g, uint64_t b, BlockSummary* summaries) {
  int32_t q[kBlockValues];
  uint64_t outliers;
  summaries[b] = quantize_block(g, b, q, outliers);
}

// Stage 2: block b works if a run starts there (b = 0, or block b - 1 is an anchor); it walks
// the run, writing each block's carry and size, up to and including the next anchor.
HYCC_HD inline void resolve_stage(const EncodeGeometry& g, uint64_t b,
                                  const BlockSummary* summaries, int32_t* carries,
                                  uint64_t* sizes) {
  const uint32_t elem = element_bytes(g.dtype);
  if (b != 0 && !coded_for_any_carry(summaries[b - 1], elem)) return;
  int32_t carry = b == 0 ? 0 : summaries[b - 1].last;
  for (uint64_t j = b; j < g.blocks; ++j) {
    const BlockSummary& s = summaries[j];
    const BlockPlan plan = plan_block(s, carry, elem);
    carries[j] = carry;
    sizes[j] = plan.bytes;
    if (coded_for_any_carry(s, elem)) break;  // the next run starts after it
    if (!plan.verbatim) carry = s.last;
  }
}

// Stage 4: writes block b at payload + kPreambleBytes + offsets[b].
HYCC_HD inline void write_stage(const EncodeGeometry& g, uint64_t b, const int32_t* carries,
                                const uint64_t* offsets, uint8_t* payload) {
  int32_t q[kBlockValues];
  uint64_t outliers;
  const BlockSummary s = quantize_block(g, b, q, outliers);
  const uint32_t elem = element_bytes(g.dtype);
  const BlockPlan plan = plan_block(s, carries[b], elem);
  write_block(plan, s, carries[b], q, outliers, g.raw(b), elem,
              payload + kPreambleBytes + offsets[b]);
}

struct DecodeGeometry {
  const uint8_t* blocks = nullptr;  // the payload after its preamble
  uint64_t bytes = 0;               // of `blocks`
  uint64_t count = 0;
  uint64_t nblocks = 0;
  DType dtype = DType::kF32;
  double step = 1;

  HYCC_HD uint32_t values(uint64_t b) const {
    return static_cast<uint32_t>(count - b * kBlockValues < kBlockValues ? count - b * kBlockValues
                                                                         : kBlockValues);
  }
};

// Result of the walk: the first malformed block (error != kNone), or trailing bytes (end <
// bytes), or neither.
struct WalkResult {
  BlockError error = BlockError::kNone;
  uint64_t block = 0;  // the malformed block
  uint64_t end = 0;    // where the last block ends
};

// The checked walk from block `first` at `start` (relative to `blocks`) to the last block:
// offsets[b] of every block it parses.
HYCC_HD inline WalkResult walk_from(const DecodeGeometry& g, uint64_t first, uint64_t start,
                                    uint64_t* offsets) {
  WalkResult r;
  r.end = start;
  const uint32_t elem = element_bytes(g.dtype);
  for (uint64_t b = first; b < g.nblocks; ++b) {
    BlockLayout layout;
    r.error = parse_block(g.blocks + r.end, g.bytes - r.end, g.values(b), elem, layout);
    if (r.error != BlockError::kNone) {
      r.block = b;
      return r;
    }
    offsets[b] = r.end;
    r.end += layout.bytes;
  }
  return r;
}

// Stage 1, the reference (one thread): offsets[b] of every block, relative to `blocks`. The
// device runs the parallel walk of codec/block/chain_walk.h over EbChain, which gives the same.
HYCC_HD inline WalkResult walk_stage(const DecodeGeometry& g, uint64_t* offsets) {
  return walk_from(g, 0, 0, offsets);
}

// The blocks of a payload as a chain for the parallel walk (units: bytes after the preamble).
struct EbChain {
  using Result = WalkResult;
  static constexpr uint32_t kChunk = 16384;
  DecodeGeometry g;

  HYCC_HD uint64_t units() const { return g.bytes; }
  HYCC_HD uint64_t records() const { return g.nblocks; }
  HYCC_HD uint32_t longest() const { return max_block_bytes(element_bytes(g.dtype)); }
  HYCC_HD uint32_t record_units(uint64_t pos) const {
    BlockLayout layout;
    const BlockError e =
        parse_block(g.blocks + pos, g.bytes - pos, kBlockValues, element_bytes(g.dtype), layout);
    return e == BlockError::kNone ? layout.bytes : 0;
  }
  HYCC_HD WalkResult walk_from(uint64_t first, uint64_t pos, uint64_t* offsets) const {
    return eb::walk_from(g, first, pos, offsets);
  }
  HYCC_HD uint64_t offset(uint64_t pos) const { return pos; }
};

// Parses and unpacks block b (checked by the walk already); false for a verbatim block.
HYCC_HD inline bool unpack_block(const DecodeGeometry& g, uint64_t b, const uint64_t* offsets,
                                 BlockLayout& layout, uint32_t* values) {
  const uint8_t* in = g.blocks + offsets[b];
  const uint32_t n = g.values(b);
  parse_block(in, g.bytes - offsets[b], n, element_bytes(g.dtype), layout);
  if (layout.verbatim) return false;
  unpack_values(in + layout.packed_at, n, layout.width, values);
  return true;
}

// Stage 2.
HYCC_HD inline void effect_stage(const DecodeGeometry& g, uint64_t b, const uint64_t* offsets,
                                 CarryEffect* effects) {
  BlockLayout layout;
  uint32_t values[kBlockValues];
  unpack_block(g, b, offsets, layout, values);
  effects[b] = CarryEffect::of(layout, g.values(b), values);
}

// Stage 4: block b into out, after the carry carries[b].value (the exclusive scan of stage 3).
HYCC_HD inline void decode_stage(const DecodeGeometry& g, uint64_t b, const uint64_t* offsets,
                                 const CarryEffect* carries, void* out) {
  BlockLayout layout;
  uint32_t values[kBlockValues];
  const uint32_t n = g.values(b);
  const uint32_t elem = element_bytes(g.dtype);
  uint8_t* dst = static_cast<uint8_t*>(out) + b * kBlockValues * elem;
  const uint8_t* in = g.blocks + offsets[b];
  if (!unpack_block(g, b, offsets, layout, values)) {
    std::memcpy(dst, in + layout.raw_at, size_t{n} * elem);
    return;
  }
  apply_base(layout, n, carries[b].value, values);
  const uint8_t* raw = in + layout.raw_at;
  for (uint32_t i = 0; i < n; ++i) {
    if ((layout.outliers >> i) & 1u) {
      std::memcpy(dst + i * elem, raw, elem);
      raw += elem;
      continue;
    }
    const float v = reconstruct(static_cast<int32_t>(values[i]), g.step);
    if (g.dtype == DType::kF32) {
      std::memcpy(dst + i * elem, &v, 4);
    } else {
      const uint16_t h = g.dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
      std::memcpy(dst + i * elem, &h, 2);
    }
  }
}

}  // namespace hycc::codec::eb
