#include "codec/checksummed_coding.h"

#include <algorithm>
#include <optional>

#include "common/xxh3.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

// Payload bytes coded and hashed at a time: small enough that a chunk is still in the L1 or L2
// cache when the hash reads it, large enough that the per-call costs vanish.
constexpr size_t kChunkBytes = 128 * 1024;
// Below this payload size the whole payload is in cache after coding anyway.
constexpr size_t kChunkedFromBytes = 256 * 1024;

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
