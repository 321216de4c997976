// "mpc": lossless compression of floating-point bit patterns in the style of MPC (Yang, Mukka,
// Hesaaraki, Burtscher, "MPC: a massively parallel compression algorithm for scientific data",
// IEEE Cluster 2015). Every element is taken as an unsigned W-bit word (W = 32 for f32, 16 for
// bf16 and f16) and goes through four steps:
//   1. delta:     d[i] = w[i] - w[i - dim] (mod 2^W), with w[i - dim] = 0 for i < dim, so the
//                 first dim words pass unchanged. dim > 1 follows interleaved data (complex
//                 numbers, channels) along its stride.
//   2. map:       negative deltas (sign bit set) keep the sign bit and flip the other W-1 bits
//                 (sign and magnitude - 1), so small deltas of either sign have zeros in all high
//                 bits but the sign (-1 becomes 0x80000000). Its own inverse. Ratios measured on
//                 2^20 values, f32 / bf16 / f16, dim=1: smooth 1.557 / 3.974 / 2.345 and gaussian
//                 0.970 / 0.941 / 0.941 with this map; identical with zigzag (its bits are this
//                 map's rotated by one, so the same planes are zero); smooth 1.557 / 3.735 / 2.329
//                 with plain sign and magnitude; smooth 1.084 / 1.386 / 1.216 with no map.
//                 Kept over zigzag because the bit planes stay in place (sign on top).
//   3. transpose: each group of W consecutive words is a W x W bit matrix; bit j of word k moves to
//                 bit k of word j, so a bit position that is zero in all W deltas becomes one zero
//                 word.
//   4. zero-word elimination: per group, a W-bit bitmap whose bit j says that transposed word j is
//                 non-zero, followed by the non-zero words in increasing j.
//
// Payload layout (W-bit little-endian words, nothing else; dtype, count and dim come from the
// stream header):
//   for each group g in [0, ceil(count / W)):
//     bitmap    1 word
//     planes    popcount(bitmap) words, transposed word j for every set bit j
// The last group is padded with zero (mapped) words up to W; the decoder rejects non-zero padding,
// so every input has exactly one payload. Worst case, every transposed word non-zero:
// ceil(count / W) * (W + 1) words, 3.1% (f32) or 6.3% (16-bit) above the raw size.
//
// Header parameters: byte 0 = dim (1..64), bytes 1..15 zero.
//
// The fast path works on batches of kLanes = 16 / sizeof(word) groups (128 words): lane
// transposes turn the words into rows[k] = word k of every group, one 128-bit vector per row,
// so the bit transpose (Hacker's Delight transpose32, recursive block swaps) and the zero tests
// run on all groups of a batch at once; the planes go back to memory order for the zero-word
// elimination. codec/mpc_reference.cc does the same one step at a time and is the oracle of the
// tests.
// The map, the transpose (here on rows of vectors, on the device on rows of single words), the
// zero-word elimination and the group reader are codec/block/mpc_block.h, shared with the CUDA
// kernels.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "codec/block/mpc_block.h"
#include "codec/params_io.h"
#include "codec/registry.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

// Words go to the payload in host order, which the layout fixes as little-endian.
static_assert(std::endian::native == std::endian::little, "mpc payloads are little-endian");

constexpr int kMaxDim = 64;
constexpr std::string_view kHelp = "dim=1..64 (default 1): delta stride in elements";

// 128-bit vectors of words (GCC/Clang vector extensions: SSE2 on x86-64, NEON on AArch64).
typedef uint32_t U32x4 __attribute__((vector_size(16)));
typedef uint16_t U16x8 __attribute__((vector_size(16)));

template <typename Word>
struct VectorOf;
template <>
struct VectorOf<uint32_t> {
  using Type = U32x4;
};
template <>
struct VectorOf<uint16_t> {
  using Type = U16x8;
};

// A batch: kLanes consecutive groups of W words, as rows[k] = word k of every group (lane l holds
// group l). In memory order the same words are group l, word k at l * W + k.
template <typename Word>
struct Batch {
  using Vec = typename VectorOf<Word>::Type;
  static constexpr int kBits = static_cast<int>(sizeof(Word)) * 8;  // W: words per group
  static constexpr int kLanes = static_cast<int>(sizeof(Vec) / sizeof(Word));
  static constexpr int kVectorsPerGroup = kBits / kLanes;
  static constexpr size_t kWords = static_cast<size_t>(kBits) * kLanes;

  Vec rows[kBits];
};

template <typename Vec, typename T>
Vec load_vector(const T* p) {
  Vec v;
  std::memcpy(&v, p, sizeof(Vec));
  return v;
}

using mpc::sign_magnitude;

// Interleave the low (high) halves of two vectors: {a0, b0, a1, b1, ...}.
inline U32x4 zip_low(U32x4 a, U32x4 b) { return __builtin_shufflevector(a, b, 0, 4, 1, 5); }
inline U32x4 zip_high(U32x4 a, U32x4 b) { return __builtin_shufflevector(a, b, 2, 6, 3, 7); }
inline U16x8 zip_low(U16x8 a, U16x8 b) {
  return __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11);
}
inline U16x8 zip_high(U16x8 a, U16x8 b) {
  return __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15);
}

// Transposes a kLanes x kLanes matrix of words, one vector per row: lane c of v[r] moves to lane
// r of v[c]. log2(kLanes) rounds of interleaving (each a perfect shuffle of the row index).
template <typename Vec, size_t kN>
void transpose_lanes(Vec (&v)[kN]) {
  for (size_t round = 1; round < kN; round *= 2) {
    Vec next[kN];
    for (size_t r = 0; r < kN / 2; ++r) {
      next[2 * r] = zip_low(v[r], v[r + kN / 2]);
      next[2 * r + 1] = zip_high(v[r], v[r + kN / 2]);
    }
    std::memcpy(v, next, sizeof(next));
  }
}

// {0, ..., 0, x[0], x[1], ...}: the lanes of x moved kShift lanes up.
template <size_t kShift, typename Vec, size_t... kLane>
Vec shift_lanes_up(Vec x, std::index_sequence<kLane...>) {
  constexpr size_t kZero = sizeof...(kLane);  // lane 0 of the second operand
  return __builtin_shufflevector(x, Vec{}, (kLane >= kShift ? kLane - kShift : kZero)...);
}

// Inclusive prefix sum across the lanes: {x0, x0 + x1, x0 + x1 + x2, ...}.
template <typename Vec>
Vec prefix_sum(Vec x) {
  constexpr size_t kLanes = sizeof(Vec) / sizeof(x[0]);
  const auto lanes = std::make_index_sequence<kLanes>();
  x += shift_lanes_up<1>(x, lanes);
  x += shift_lanes_up<2>(x, lanes);
  if constexpr (kLanes > 4) x += shift_lanes_up<4>(x, lanes);
  return x;
}

// Words in memory order (group l, word k at l * W + k) -> b.rows.
template <typename Word>
void load_rows(const Word* words, Batch<Word>& b) {
  using B = Batch<Word>;
  for (int q = 0; q < B::kVectorsPerGroup; ++q) {  // words [q * kLanes, (q + 1) * kLanes)
    typename B::Vec block[B::kLanes];
    for (int l = 0; l < B::kLanes; ++l) {
      block[l] = load_vector<typename B::Vec>(words + (l * B::kVectorsPerGroup + q) * B::kLanes);
    }
    transpose_lanes(block);
    for (int l = 0; l < B::kLanes; ++l) b.rows[q * B::kLanes + l] = block[l];
  }
}

// The inverse of load_rows.
template <typename Word>
void store_rows(const Batch<Word>& b, Word* words) {
  using B = Batch<Word>;
  for (int q = 0; q < B::kVectorsPerGroup; ++q) {
    typename B::Vec block[B::kLanes];
    for (int l = 0; l < B::kLanes; ++l) block[l] = b.rows[q * B::kLanes + l];
    transpose_lanes(block);
    for (int l = 0; l < B::kLanes; ++l) {
      std::memcpy(words + (l * B::kVectorsPerGroup + q) * B::kLanes, &block[l], sizeof(block[l]));
    }
  }
}

// Transposes the W x W bit matrix of every group in the batch: the shared transpose on rows of
// vectors (one group per lane); the device runs it on rows of single words.
template <typename Word>
void transpose_bits(Batch<Word>& b) {
  mpc::transpose_bits<Word>(b.rows);
}

// Lane l: the bitmap of the non-zero rows of group l.
template <typename Word>
typename Batch<Word>::Vec nonzero_bitmaps(const Batch<Word>& b) {
  using Vec = typename Batch<Word>::Vec;
  Vec bitmaps{};
  for (int j = 0; j < Batch<Word>::kBits; ++j) {
    const Word bit = static_cast<Word>(Word{1} << j);
    bitmaps |= __builtin_convertvector(b.rows[j] != 0, Vec) & bit;
  }
  return bitmaps;
}

// Encodes the batch of words [begin, begin + kWords) into dst, returns the end of what it wrote.
// kEdge handles the batches that reach before dim or past count; dst has room for
// (W + 1) words per group that holds an element.
template <typename Word, bool kEdge>
std::byte* encode_batch(const Word* w, size_t count, size_t dim, size_t begin, std::byte* dst) {
  using B = Batch<Word>;
  using Vec = typename B::Vec;
  Word words[B::kWords];  // mapped deltas, then transposed planes (group l, plane j at l * W + j)
  if constexpr (kEdge) {
    for (size_t k = 0; k < B::kWords; ++k) {
      const size_t i = begin + k;
      const Word previous = i >= dim && i < count ? w[i - dim] : Word{0};
      words[k] = sign_magnitude<B::kBits>(i < count ? static_cast<Word>(w[i] - previous) : Word{0});
    }
  } else {
    for (size_t k = 0; k < B::kWords; k += B::kLanes) {
      const Word* at = w + begin + k;
      const Vec mapped =
          sign_magnitude<B::kBits>(load_vector<Vec>(at) - load_vector<Vec>(at - dim));
      std::memcpy(words + k, &mapped, sizeof(mapped));
    }
  }
  B b;
  load_rows(words, b);
  transpose_bits(b);
  const Vec bitmaps = nonzero_bitmaps(b);  // lane l: the bitmap of group l
  store_rows(b, words);
  const size_t groups =
      kEdge ? std::min<size_t>(B::kLanes, (count - begin + B::kBits - 1) / B::kBits) : B::kLanes;
  auto* out = reinterpret_cast<uint8_t*>(dst);
  for (size_t l = 0; l < groups; ++l) {
    out = mpc::emit_group(static_cast<Word>(bitmaps[l]), words + l * B::kBits, out);
  }
  return reinterpret_cast<std::byte*>(out);
}

[[noreturn]] void fail(const std::string& what) { throw CorruptStream(tagged("codec:mpc", what)); }

// Reads one group (bitmap + planes) from src into planes[0, W) and bitmap (mpc::read_group);
// returns the end of the group. Whether the planes the bitmap announces are non-zero is checked
// by the caller.
template <typename Word>
const std::byte* read_group(const std::byte* src, const std::byte* end, Word* planes,
                            Word& bitmap) {
  const auto available = static_cast<size_t>(end - src);
  size_t bytes = 0;
  const mpc::GroupError error =
      mpc::read_group(reinterpret_cast<const uint8_t*>(src), available, planes, bitmap, bytes);
  if (error == mpc::GroupError::kNoBitmap) {
    fail(detail::concat("payload ends before the bitmap of a group (", available, " bytes left)"));
  }
  if (error != mpc::GroupError::kNone) {
    fail(detail::concat("bitmap announces ", std::popcount(bitmap), " words, only ",
                        available - sizeof(Word), " bytes left"));
  }
  return src + bytes;
}

// Decodes the batch of words [begin, begin + kWords) from src into w; returns the end of what it
// read. kEdge handles the batches that reach before dim or past count.
template <typename Word, bool kEdge>
const std::byte* decode_batch(const std::byte* src, const std::byte* end, Word* w, size_t count,
                              size_t dim, size_t begin) {
  using B = Batch<Word>;
  using Vec = typename B::Vec;
  const size_t groups =
      kEdge ? std::min<size_t>(B::kLanes, (count - begin + B::kBits - 1) / B::kBits) : B::kLanes;
  Word words[B::kWords];  // planes (group l, plane j at l * W + j), then mapped deltas
  Vec bitmaps{};
  for (size_t l = 0; l < groups; ++l) {
    Word bitmap;
    src = read_group(src, end, words + l * B::kBits, bitmap);
    bitmaps[l] = bitmap;
  }
  std::fill(words + groups * B::kBits, words + B::kWords, Word{0});
  B b;
  load_rows(words, b);
  // The encoder never stores a zero plane; rejecting one keeps every input to one payload.
  const Vec nonzero = nonzero_bitmaps(b);
  for (int l = 0; l < B::kLanes; ++l) {
    if (nonzero[l] != bitmaps[l]) fail("bitmap marks a zero word as present");
  }
  transpose_bits(b);
  for (auto& row : b.rows) row = sign_magnitude<B::kBits>(row);
  store_rows(b, words);
  if constexpr (kEdge) {
    for (size_t k = 0; k < B::kWords; ++k) {
      const size_t i = begin + k;
      if (i >= count) {
        if (words[k] != 0) fail("non-zero padding after the last element");
        continue;
      }
      w[i] = static_cast<Word>((i >= dim ? w[i - dim] : Word{0}) + words[k]);
    }
  } else if (dim == 1) {
    // Prefix sums of whole vectors: a scalar running sum through memory would make every element
    // wait for the store of the previous one.
    Word running = w[begin - 1];
    for (size_t k = 0; k < B::kWords; k += B::kLanes) {
      const Vec sums = prefix_sum(load_vector<Vec>(words + k)) + running;
      std::memcpy(w + begin + k, &sums, sizeof(sums));
      running = sums[B::kLanes - 1];
    }
  } else if (dim % B::kLanes == 0) {  // whole vectors, each from the one dim words back
    for (size_t k = 0; k < B::kWords; k += B::kLanes) {
      const Vec sums = load_vector<Vec>(w + begin + k - dim) + load_vector<Vec>(words + k);
      std::memcpy(w + begin + k, &sums, sizeof(sums));
    }
  } else {
    for (size_t k = 0; k < B::kWords; ++k) {
      w[begin + k] = static_cast<Word>(w[begin + k - dim] + words[k]);
    }
  }
  return src;
}

template <typename Word>
size_t encode_words(const Word* w, size_t count, size_t dim, std::byte* out) {
  constexpr size_t kWords = Batch<Word>::kWords;
  std::byte* dst = out;
  size_t begin = 0;
  // dim <= 64 < kWords: only the first batch reaches before the first element.
  if (count >= kWords) {
    dst = encode_batch<Word, true>(w, count, dim, 0, dst);
    for (begin = kWords; begin + kWords <= count; begin += kWords) {
      dst = encode_batch<Word, false>(w, count, dim, begin, dst);
    }
  }
  if (begin < count) dst = encode_batch<Word, true>(w, count, dim, begin, dst);
  return static_cast<size_t>(dst - out);
}

template <typename Word>
void decode_words(std::span<const std::byte> payload, Word* w, size_t count, size_t dim) {
  constexpr size_t kWords = Batch<Word>::kWords;
  const std::byte* src = payload.data();
  const std::byte* end = payload.data() + payload.size();
  size_t begin = 0;
  if (count >= kWords) {
    src = decode_batch<Word, true>(src, end, w, count, dim, 0);
    for (begin = kWords; begin + kWords <= count; begin += kWords) {
      src = decode_batch<Word, false>(src, end, w, count, dim, begin);
    }
  }
  if (begin < count) src = decode_batch<Word, true>(src, end, w, count, dim, begin);
  if (src != end) {
    fail(detail::concat("payload of ", payload.size(), " bytes has ", end - src,
                        " bytes after the last group"));
  }
}

class MpcCodec final : public Codec {
 public:
  explicit MpcCodec(int dim) : dim_(dim) {}

  CodecId id() const override { return CodecId::kMpc; }
  std::string spec() const override { return "mpc:dim=" + std::to_string(dim_); }
  bool lossless() const override { return true; }
  CodecParams params() const override {
    CodecParams p;
    put_u8(p, 0, static_cast<uint8_t>(dim_));
    return p;
  }

  size_t max_payload_bytes(DType dtype, size_t count) const override {
    const size_t word_bytes = dtype_size(dtype);
    const size_t bits = word_bytes * 8;
    const size_t groups = count / bits + (count % bits != 0);
    const size_t group_bytes = (bits + 1) * word_bytes;
    // Saturates for counts no buffer can hold, so that the bound stays an upper bound.
    if (groups > std::numeric_limits<size_t>::max() / group_bytes) {
      return std::numeric_limits<size_t>::max();
    }
    return groups * group_bytes;
  }

  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions&) const override {
    const auto dim = static_cast<size_t>(dim_);
    if (in.dtype == DType::kF32) {
      return encode_words(static_cast<const uint32_t*>(in.data), in.count, dim, out.data());
    }
    return encode_words(static_cast<const uint16_t*>(in.data), in.count, dim, out.data());
  }

  void decode(std::span<const std::byte> payload, TensorView out) const override {
    if (payload.size() % dtype_size(out.dtype) != 0) {
      fail(detail::concat("payload of ", payload.size(), " bytes is not a whole number of ",
                          dtype_size(out.dtype), "-byte words"));
    }
    const auto dim = static_cast<size_t>(dim_);
    if (out.dtype == DType::kF32) {
      decode_words(payload, static_cast<uint32_t*>(out.data), out.count, dim);
    } else {
      decode_words(payload, static_cast<uint16_t*>(out.data), out.count, dim);
    }
  }

 private:
  int dim_;
};

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  const int dim = args.get_int("dim", 1, 1, kMaxDim);
  args.finish(kHelp);
  return std::make_shared<MpcCodec>(dim);
}

std::shared_ptr<const Codec> from_params(const CodecParams& params) {
  const int dim = get_u8(params, 0);
  if (dim < 1 || dim > kMaxDim) {
    throw CorruptStream(
        tagged("codec:mpc", "invalid dim ", dim, " in stream header (1..", kMaxDim, ")"));
  }
  require_unused_params_zero(params, 1, "codec:mpc");
  return std::make_shared<MpcCodec>(dim);
}

}  // namespace

const CodecEntry& mpc_entry() {
  static const CodecEntry e{"mpc", CodecId::kMpc, kHelp, from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
