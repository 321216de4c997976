#include "codec/checksummed_coding.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/xxh3.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

// Payload bytes coded and hashed at a time: small enough that a chunk is still in the L1 or L2
// cache when the hash reads it, large enough that the per-call costs vanish.
constexpr size_t kChunkBytes = 128 * 1024;
// Below this payload size the whole payload is in cache after coding anyway.
constexpr size_t kChunkedFromBytes = 256 * 1024;

// From this size on, codec "none" encodes with stores that bypass the caches: the copy no longer
// fits in them, and ordinary stores would first read every destination line from memory
// (`hycc-bench codec --data gaussian --count 16777216 --codec none`: 0.75-0.83x memcpy before,
// 0.85-0.93x after). Decoding gained nothing from it: there the hash has already brought the
// payload chunk into cache.
constexpr size_t kBypassFromBytes = 8 << 20;

// Payload bytes per element for codecs whose payload holds element i at i * width.
std::optional<size_t> elementwise_width(const Codec& codec, DType dtype) {
  switch (codec.id()) {
    case CodecId::kNone:
      return dtype_size(dtype);
    case CodecId::kBF16:
    case CodecId::kFP16:
      return 2;
    default:
      return std::nullopt;
  }
}

// The chunks of `count` elements: each call of f gets (first element, element count).
template <typename F>
void for_each_chunk(size_t count, size_t width, F&& f) {
  const size_t per_chunk = std::max<size_t>(1, kChunkBytes / width);
  for (size_t first = 0; first < count; first += per_chunk) {
    f(first, std::min(per_chunk, count - first));
  }
}

// memcpy with non-temporal stores (SSE2, x86-64's baseline); finish with store_fence().
void copy_bypassing_caches(std::byte* dst, const std::byte* src, size_t n) {
#if defined(__SSE2__)
  const size_t head = std::min(n, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    for (size_t k = 0; k < 64; k += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + k));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k), v);
    }
  }
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

// Orders the non-temporal stores before whatever reads the destination next.
void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

const std::byte* at(const void* p, size_t offset) {
  return static_cast<const std::byte*>(p) + offset;
}
std::byte* at(void* p, size_t offset) { return static_cast<std::byte*>(p) + offset; }

}  // namespace

ChecksummedPayload encode_checksummed(const Codec& codec, ConstTensorView in,
                                      std::span<std::byte> out, const CompressOptions& options) {
  const std::optional<size_t> width = elementwise_width(codec, in.dtype);
  if (!width || in.count * *width < kChunkedFromBytes) {
    const size_t bytes = codec.encode(in, out, options);
    return {bytes, payload_checksum(out.first(bytes))};
  }
  Xxh3Stream hash;
  const size_t element_bytes = dtype_size(in.dtype);
  if (codec.id() == CodecId::kNone && in.count * *width >= kBypassFromBytes) {
    for_each_chunk(in.count, *width, [&](size_t first, size_t n) {
      const std::byte* chunk = at(in.data, first * element_bytes);
      copy_bypassing_caches(out.data() + first * element_bytes, chunk, n * element_bytes);
      hash.update(chunk, n * element_bytes);  // the same bytes, still in cache
    });
    store_fence();
    return {in.count * *width, hash.digest()};
  }
  for_each_chunk(in.count, *width, [&](size_t first, size_t n) {
    const std::span<std::byte> chunk_out = out.subspan(first * *width, n * *width);
    const size_t bytes =
        codec.encode({in.dtype, n, at(in.data, first * element_bytes)}, chunk_out, options);
    hash.update(chunk_out.data(), bytes);
  });
  return {in.count * *width, hash.digest()};
}

void decode_checksummed(const Codec& codec, std::span<const std::byte> payload, TensorView out,
                        const StreamSeal& seal) {
  const std::optional<size_t> width = elementwise_width(codec, out.dtype);
  uint64_t actual = 0;
  if (!width || payload.size() != out.count * *width || payload.size() < kChunkedFromBytes) {
    actual = payload_checksum(payload);
    if (seal.accepts(actual)) codec.decode(payload, out);
  } else {
    Xxh3Stream hash;
    const size_t element_bytes = dtype_size(out.dtype);
    for_each_chunk(out.count, *width, [&](size_t first, size_t n) {
      const std::span<const std::byte> chunk = payload.subspan(first * *width, n * *width);
      hash.update(chunk.data(), chunk.size());
      codec.decode(chunk, {out.dtype, n, at(out.data, first * element_bytes)});
    });
    actual = hash.digest();
  }
  if (!seal.accepts(actual)) {
    throw CorruptStream(tagged("codec", "checksum mismatch: the stream is corrupted"));
  }
}

}  // namespace hycc::codec
