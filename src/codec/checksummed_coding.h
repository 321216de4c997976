// Encoding and decoding with the payload's checksum (XXH3-64, stream.h) computed in the same
// pass. For codecs whose payload holds element i at a fixed offset (none, bf16, fp16), large
// tensors are coded in chunks and each chunk's payload is hashed while it is still in cache,
// so the data crosses memory once instead of twice; other codecs hash the payload they wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/stream.h"
#include "hycc/codec.h"

namespace hycc::codec {

struct ChecksummedPayload {
  size_t bytes = 0;
  uint64_t checksum = 0;  // payload_checksum() of the payload's bytes
};

// Codec::encode, also returning the payload's checksum.
ChecksummedPayload encode_checksummed(const Codec& codec, ConstTensorView in,
                                      std::span<std::byte> out, const CompressOptions& options);

// Codec::decode of a payload whose checksum `seal` must accept; throws CorruptStream where it
// does not (the output may then be partly written, as after any CorruptStream).
void decode_checksummed(const Codec& codec, std::span<const std::byte> payload, TensorView out,
                        const StreamSeal& seal);

}  // namespace hycc::codec
