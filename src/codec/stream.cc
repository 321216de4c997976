#include "codec/stream.h"

#include <cstring>
#include <limits>

#include "codec/byte_io.h"
#include "codec/checksummed_coding.h"
#include "codec/registry.h"
#include "common/xxh3.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

constexpr size_t kChecksumAt = 40;

// Parses and validates the fixed part of a header; does not look at the checksum.
StreamHeader parse_header(std::span<const std::byte> s) {
  if (s.size() < kStreamHeaderBytes) {
    throw CorruptStream(tagged("codec", "truncated stream: ", s.size(),
                               " bytes, the header alone needs ", kStreamHeaderBytes));
  }
  const auto* b = reinterpret_cast<const uint8_t*>(s.data());
  if (b[0] != 'H' || b[1] != 'Y' || b[2] != 'C') {
    throw CorruptStream(tagged("codec", "not a hycc stream (bad magic)"));
  }
  if (b[3] == 1) {
    throw CorruptStream(tagged("codec",
                               "stream format version 1 is no longer read: it was written ",
                               "by an older hycc; this build reads version ", int(kStreamVersion)));
  }
  if (b[3] != kStreamVersion) {
    throw CorruptStream(tagged("codec", "unsupported stream version ", int(b[3]), " (this build ",
                               "reads version ", int(kStreamVersion), ")"));
  }
  StreamHeader h;
  if (find_codec(static_cast<CodecId>(b[4])) == nullptr) {
    throw CorruptStream(tagged("codec", "unknown codec id ", int(b[4]), " in stream header"));
  }
  h.codec = static_cast<CodecId>(b[4]);
  if (!is_valid_dtype(b[5])) {
    throw CorruptStream(tagged("codec", "invalid dtype ", int(b[5]), " in stream header"));
  }
  h.dtype = static_cast<DType>(b[5]);
  if (b[6] != 0 || b[7] != 0) {
    throw CorruptStream(tagged("codec", "unknown flags in stream header"));
  }
  h.count = load_u64(s.data() + 8);
  h.payload_bytes = load_u64(s.data() + 16);
  std::memcpy(h.params.bytes.data(), s.data() + 24, 16);
  if (h.count > std::numeric_limits<uint64_t>::max() / 8) {
    throw CorruptStream(tagged("codec", "implausible element count ", h.count));
  }
  if (h.payload_bytes > s.size() - kStreamHeaderBytes) {
    throw CorruptStream(tagged("codec", "truncated stream: header declares ", h.payload_bytes,
                               " payload bytes, only ", s.size() - kStreamHeaderBytes, " present"));
  }
  return h;
}

}  // namespace

uint64_t payload_checksum(std::span<const std::byte> payload) {
  return xxh3(payload.data(), payload.size());
}

uint64_t header_checksum(const std::byte* header, uint64_t payload_sum) {
  return xxh3_seeded(header, kChecksumAt, payload_sum);
}

void write_header(const StreamHeader& h, uint64_t payload_sum, std::span<std::byte> out) {
  auto* b = reinterpret_cast<uint8_t*>(out.data());
  b[0] = 'H';
  b[1] = 'Y';
  b[2] = 'C';
  b[3] = kStreamVersion;
  b[4] = static_cast<uint8_t>(h.codec);
  b[5] = static_cast<uint8_t>(h.dtype);
  b[6] = 0;
  b[7] = 0;
  store_u64(out.data() + 8, h.count);
  store_u64(out.data() + 16, h.payload_bytes);
  std::memcpy(out.data() + 24, h.params.bytes.data(), 16);
  store_u64(out.data() + kChecksumAt, header_checksum(out.data(), payload_sum));
}

void reseal_stream(std::span<std::byte> stream) {
  const StreamHeader h = parse_header(stream);
  write_header(h, payload_checksum(stream.subspan(kStreamHeaderBytes, h.payload_bytes)), stream);
}

}  // namespace hycc::codec

namespace hycc {

using codec::StreamHeader;

namespace {

bool is_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; }

void check_alignment(ConstTensorView t) {
  if (reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) != 0) {
    throw InvalidArgument(tagged("codec", "tensor data at ", t.data, " is not aligned to its ",
                                 dtype_size(t.dtype), "-byte ", dtype_name(t.dtype), " elements"));
  }
}

struct ValidatedStream {
  StreamHeader header;
  std::shared_ptr<const Codec> codec;
  codec::StreamSeal seal;

  std::span<const std::byte> payload(std::span<const std::byte> stream) const {
    return stream.subspan(kStreamHeaderBytes, header.payload_bytes);
  }
};

// Validates everything but the checksum, which decompress() checks in its decoding pass.
ValidatedStream validate_header(std::span<const std::byte> stream) {
  const StreamHeader h = codec::parse_header(stream);
  const codec::StreamSeal seal{stream.data(), codec::load_u64(stream.data() + codec::kChecksumAt)};
  std::shared_ptr<const Codec> c = codec::find_codec(h.codec)->from_params(h.params);
  if (h.count > std::numeric_limits<size_t>::max() / 8 ||
      h.payload_bytes > c->max_payload_bytes(h.dtype, h.count)) {
    throw CorruptStream(tagged("codec", "payload of ", h.payload_bytes, " bytes exceeds what ",
                               c->spec(), " can produce for ", h.count, " elements"));
  }
  return {h, std::move(c), seal};
}

ValidatedStream validate_stream(std::span<const std::byte> stream) {
  ValidatedStream v = validate_header(stream);
  if (!v.seal.accepts(codec::payload_checksum(v.payload(stream)))) {
    throw CorruptStream(tagged("codec", "checksum mismatch: the stream is corrupted"));
  }
  return v;
}

}  // namespace

CodecConfig::CodecConfig() : CodecConfig(parse("none")) {}

CodecConfig::CodecConfig(std::shared_ptr<const Codec> codec) : codec_(std::move(codec)) {
  if (!codec_) throw InvalidArgument(tagged("codec", "CodecConfig from a null codec"));
  spec_ = codec_->spec();
}

size_t max_compressed_bytes(const CodecConfig& config, DType dtype, size_t count) {
  return kStreamHeaderBytes + config.codec().max_payload_bytes(dtype, count);
}

std::optional<size_t> regular_compressed_bytes(const CodecConfig& config, DType dtype,
                                               size_t count) {
  const std::optional<size_t> payload = config.codec().regular_payload_bytes(dtype, count);
  if (!payload) return std::nullopt;
  return kStreamHeaderBytes + *payload;
}

size_t compress(const CodecConfig& config, ConstTensorView in, std::span<std::byte> out,
                const CompressOptions& options) {
  const size_t need = max_compressed_bytes(config, in);
  if (out.size() < need) {
    throw InvalidArgument(tagged(
        "codec", "output buffer of ", out.size(), " bytes is too small for ", config.spec(), " on ",
        in.count, " ", dtype_name(in.dtype), " elements: max_compressed_bytes() is ", need));
  }
  if (in.count != 0 && in.data == nullptr) {
    throw InvalidArgument(tagged("codec", "compress: null input with ", in.count, " elements"));
  }
  check_alignment(in);
  const Codec& c = config.codec();
  codec::ChecksummedPayload payload;
  if (is_aligned(out.data())) {
    payload = codec::encode_checksummed(c, in, out.subspan(kStreamHeaderBytes), options);
  } else {  // codecs may assume an 8-byte aligned payload; stage through an aligned buffer
    std::vector<uint64_t> staging((need - kStreamHeaderBytes + 7) / 8);
    std::span<std::byte> aligned(reinterpret_cast<std::byte*>(staging.data()), staging.size() * 8);
    payload = codec::encode_checksummed(c, in, aligned, options);
    if (payload.bytes > 0) {  // an empty tensor's staging has no storage to copy from
      std::memcpy(out.data() + kStreamHeaderBytes, staging.data(), payload.bytes);
    }
  }
  StreamHeader h{c.id(), in.dtype, in.count, payload.bytes, c.params()};
  codec::write_header(h, payload.checksum, out);
  return kStreamHeaderBytes + payload.bytes;
}

std::vector<std::byte> compress(const CodecConfig& config, ConstTensorView in,
                                const CompressOptions& options) {
  std::vector<std::byte> out(max_compressed_bytes(config, in));
  out.resize(compress(config, in, out, options));
  return out;
}

StreamInfo inspect(std::span<const std::byte> stream) {
  const ValidatedStream v = validate_stream(stream);
  const StreamHeader& h = v.header;
  return StreamInfo{h.codec, h.dtype, h.count, h.payload_bytes, v.codec->spec()};
}

void decompress(std::span<const std::byte> stream, TensorView out) {
  const ValidatedStream v = validate_header(stream);
  const StreamHeader& h = v.header;
  if (h.dtype != out.dtype || h.count != out.count) {
    throw InvalidArgument(tagged("codec", "stream holds ", h.count, " ", dtype_name(h.dtype),
                                 " elements but the output buffer has ", out.count, " ",
                                 dtype_name(out.dtype)));
  }
  if (out.count != 0 && out.data == nullptr) {
    throw InvalidArgument(tagged("codec", "decompress: null output with ", out.count, " elements"));
  }
  check_alignment(out);
  const std::span<const std::byte> payload = v.payload(stream);
  if (is_aligned(payload.data())) {
    codec::decode_checksummed(*v.codec, payload, out, v.seal);
  } else {  // codecs may assume an 8-byte aligned payload
    std::vector<uint64_t> staging((payload.size() + 7) / 8);
    if (!payload.empty()) std::memcpy(staging.data(), payload.data(), payload.size());
    codec::decode_checksummed(*v.codec,
                              {reinterpret_cast<const std::byte*>(staging.data()), payload.size()},
                              out, v.seal);
  }
}

std::span<const std::byte> stream_payload(std::span<const std::byte> stream) {
  const StreamInfo info = inspect(stream);
  return stream.subspan(kStreamHeaderBytes, info.payload_bytes);
}

size_t frame_payload(const CodecConfig& config, DType dtype, size_t count,
                     std::span<const std::byte> payload, std::span<std::byte> out) {
  if (payload.size() > config.codec().max_payload_bytes(dtype, count)) {
    throw InvalidArgument(tagged("codec", "payload of ", payload.size(), " bytes is larger than ",
                                 config.spec(), " can produce for ", count, " elements"));
  }
  if (out.size() < kStreamHeaderBytes + payload.size()) {
    throw InvalidArgument(tagged("codec", "frame_payload: output buffer too small"));
  }
  if (!payload.empty())
    std::memmove(out.data() + kStreamHeaderBytes, payload.data(), payload.size());
  StreamHeader h{config.id(), dtype, count, payload.size(), config.codec().params()};
  codec::write_header(h, codec::payload_checksum(out.subspan(kStreamHeaderBytes, payload.size())),
                      out);
  return kStreamHeaderBytes + payload.size();
}

}  // namespace hycc
