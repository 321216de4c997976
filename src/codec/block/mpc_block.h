// Per-group logic of codec "mpc" (payload layout at the top of src/codec/codec_mpc.cc), shared by
// the CPU codec and the CUDA kernels: the sign-magnitude map, the bit transpose of a W x W
// matrix (on rows of single words for one group, as the device runs it, or of vectors holding
// one group per lane, as the CPU runs it: the same code), the zero-word elimination of a group
// and its parsing. A group is W consecutive elements (W = 32 for f32, 16 for bf16/f16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "codec/block/bit_ops.h"
#include "common/host_device.h"

namespace hycc::codec::mpc {

template <typename Word>
inline constexpr int kBits = static_cast<int>(sizeof(Word)) * 8;  // W: words per group

// Step 2 and its inverse (the map is an involution), on a word or on a vector of words: a
// negative delta keeps its sign bit and flips the others.
template <int kW, typename T>
HYCC_HD inline T sign_magnitude(T d) {
  const T negative = static_cast<T>(d >> (kW - 1));
  const T flip = static_cast<T>(static_cast<T>(-negative) >> 1);
  return static_cast<T>(d ^ flip);
}

// One stage of the recursive transpose: in every row pair (k, k + kShift) with bit kShift of k
// clear, the high kShift-bit blocks of row k trade places with the low blocks of row k + kShift.
// Row is Word (one group) or a vector of Words (one group per lane).
template <int kShift, typename Word, typename Row>
HYCC_HD inline void swap_blocks(Row* rows) {
  // kShift-bit blocks of ones every 2 * kShift bits: 0x0000FFFF, 0x00FF00FF, ..., 0x55555555.
  constexpr Word kMask =
      static_cast<Word>(static_cast<Word>(~Word{0}) / static_cast<Word>((Word{1} << kShift) + 1));
  for (int k = 0; k < kBits<Word>; k += 2 * kShift) {
    for (int r = k; r < k + kShift; ++r) {
      const Row t = static_cast<Row>(((rows[r] >> kShift) ^ rows[r + kShift]) & kMask);
      rows[r + kShift] ^= t;
      rows[r] ^= static_cast<Row>(t << kShift);
    }
  }
}

// Transposes the W x W bit matrix rows[0, W): bit j of row k trades places with bit k of row j
// (Hacker's Delight transpose32, generalized to W bits); its own inverse.
template <typename Word, typename Row>
HYCC_HD inline void transpose_bits(Row* rows) {
  if constexpr (kBits<Word> == 32) swap_blocks<16, Word>(rows);
  swap_blocks<8, Word>(rows);
  swap_blocks<4, Word>(rows);
  swap_blocks<2, Word>(rows);
  swap_blocks<1, Word>(rows);
}

// The mapped delta of element i of w[0, count) with stride dim: 0 past the end (padding).
template <typename Word>
HYCC_HD inline Word mapped_delta(const Word* w, uint64_t count, uint32_t dim, uint64_t i) {
  if (i >= count) return Word{0};
  const Word previous = i >= dim ? w[i - dim] : Word{0};
  return sign_magnitude<kBits<Word>>(static_cast<Word>(w[i] - previous));
}

template <typename Word>
HYCC_HD inline Word load_word(const uint8_t* p) {
  Word v;
  std::memcpy(&v, p, sizeof(Word));
  return v;
}

template <typename Word>
HYCC_HD inline void store_word(uint8_t* p, Word v) {
  std::memcpy(p, &v, sizeof(Word));
}

// Bytes of a group with this bitmap.
template <typename Word>
HYCC_HD inline size_t group_bytes(Word bitmap) {
  return (1 + popcount32(bitmap)) * sizeof(Word);
}

// Bit j set: plane j is non-zero.
template <typename Word>
HYCC_HD inline Word nonzero_bitmap(const Word* planes) {
  Word bitmap = 0;
  for (int j = 0; j < kBits<Word>; ++j) {
    bitmap = static_cast<Word>(bitmap | (planes[j] != 0 ? Word{1} << j : 0));
  }
  return bitmap;
}

// Zero-word elimination: writes the bitmap and the non-zero planes; returns the end.
template <typename Word>
HYCC_HD inline uint8_t* emit_group(Word bitmap, const Word* planes, uint8_t* dst) {
  store_word(dst, bitmap);
  dst += sizeof(Word);
  if (bitmap == static_cast<Word>(~Word{0})) {  // incompressible group (noise): copy
    std::memcpy(dst, planes, kBits<Word> * sizeof(Word));
    return dst + kBits<Word> * sizeof(Word);
  }
  for (int j = 0; j < kBits<Word>; ++j) {
    // Stored unconditionally and kept only if non-zero: no branch on the data. The slot after
    // the last kept word is scratch the caller provides ((W + 1) words per group).
    store_word(dst, planes[j]);
    dst += ((bitmap >> j) & 1u) * sizeof(Word);
  }
  return dst;
}

// Encodes group g of w[0, count) into dst (room for W + 1 words); returns the end.
template <typename Word>
HYCC_HD inline uint8_t* encode_group(const Word* w, uint64_t count, uint32_t dim, uint64_t g,
                                     uint8_t* dst) {
  Word planes[kBits<Word>];
  for (int k = 0; k < kBits<Word>; ++k)
    planes[k] = mapped_delta(w, count, dim, g * kBits<Word> + k);
  transpose_bits<Word>(planes);
  return emit_group(nonzero_bitmap(planes), planes, dst);
}

enum class GroupError : uint8_t {
  kNone,
  kNoBitmap,   // the payload ends before the group's bitmap
  kShort,      // the bitmap announces more words than the payload holds
  kZeroPlane,  // the bitmap marks a zero word as present
  kPadding,    // non-zero padding after the last element
};

inline const char* describe(GroupError e) {
  switch (e) {
    case GroupError::kNone:
      return "no error";
    case GroupError::kNoBitmap:
      return "payload ends before the bitmap of a group";
    case GroupError::kShort:
      return "bitmap announces more words than the payload holds";
    case GroupError::kZeroPlane:
      return "bitmap marks a zero word as present";
    case GroupError::kPadding:
      return "non-zero padding after the last element";
  }
  return "unknown error";
}

// Reads one group (bitmap + planes) from src, `available` bytes left, into planes[0, W) and
// bitmap; sets `bytes` to its size. Whether the planes the bitmap announces are non-zero is
// left to the caller.
template <typename Word>
HYCC_HD inline GroupError read_group(const uint8_t* src, size_t available, Word* planes,
                                     Word& bitmap, size_t& bytes) {
  constexpr int kW = kBits<Word>;
  if (available < sizeof(Word)) return GroupError::kNoBitmap;
  bitmap = load_word<Word>(src);
  src += sizeof(Word);
  const size_t left = available - sizeof(Word);
  bytes = group_bytes(bitmap);
  if (left < bytes - sizeof(Word)) return GroupError::kShort;
  if (bitmap == static_cast<Word>(~Word{0})) {  // incompressible group (noise): copy
    std::memcpy(planes, src, kW * sizeof(Word));
  } else if (left >= kW * sizeof(Word)) {  // a full group fits: read without branches
#if defined(__CUDACC__)
#pragma unroll
#else
#pragma GCC unroll 32
#endif
    for (int j = 0; j < kW; ++j) {
      const Word present = static_cast<Word>((bitmap >> j) & 1u);
      planes[j] = static_cast<Word>(load_word<Word>(src) & static_cast<Word>(-present));
      src += present * sizeof(Word);
    }
  } else {  // near the end: read only the words the bitmap announces
    for (int j = 0; j < kW; ++j) {
      planes[j] = Word{0};
      if ((bitmap >> j) & 1u) {
        planes[j] = load_word<Word>(src);
        src += sizeof(Word);
      }
    }
  }
  return GroupError::kNone;
}

// Decodes group g at src (`available` bytes left) into its W mapped-back deltas (d[i] =
// w[i] - w[i - dim] mod 2^W, element g * W + k in deltas[k]); checks the bitmap against the
// planes and the padding past `count`. Sets `bytes` to the group's size.
template <typename Word>
HYCC_HD inline GroupError decode_group(const uint8_t* src, size_t available, uint64_t count,
                                       uint64_t g, Word* deltas, size_t& bytes) {
  Word bitmap;
  const GroupError error = read_group(src, available, deltas, bitmap, bytes);
  if (error != GroupError::kNone) return error;
  if (nonzero_bitmap(deltas) != bitmap) return GroupError::kZeroPlane;
  transpose_bits<Word>(deltas);
  for (int k = 0; k < kBits<Word>; ++k) {
    deltas[k] = sign_magnitude<kBits<Word>>(deltas[k]);
    if (g * kBits<Word> + k >= count && deltas[k] != 0) return GroupError::kPadding;
  }
  return GroupError::kNone;
}

}  // namespace hycc::codec::mpc
