// Stateless codecs: the "what" (a tensor view), the "how" (a CodecConfig parsed from a spec
// string such as "quant:bits=4,block=64") and the "where" (byte buffers) are kept apart.
//
// Every compressed message is a self-describing stream: a 48-byte header (codec, dtype, count,
// codec parameters, payload length, checksum) followed by the codec's payload. decompress()
// validates the header and the checksum before the codec runs, the codec validates every field it
// reads, and anything malformed is rejected with CorruptStream; nothing is ever read or written
// out of bounds. After a CorruptStream the output buffer may be partly written.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hycc/dtype.h"

namespace hycc {

// Codec identifiers as stored in the stream header. Values are part of the wire format.
enum class CodecId : uint8_t {
  kNone = 0,
  kBF16 = 1,
  kFP16 = 2,
  kQuant = 3,
  kEb = 4,
  kZfp = 5,
  kMpc = 6,
  kZstd = 7,
  kExpHuff = 8,
};

// Per-call options of compress().
struct CompressOptions {
  // Seed of stochastic rounding; the same seed and input give the same stream.
  uint64_t seed = 0;
};

// The parameters a codec writes into the stream header, so that the receiver can rebuild the
// codec without knowing the sender's spec. Layout is codec-specific; unused bytes are zero.
struct CodecParams {
  std::array<uint8_t, 16> bytes{};
};

// A codec with fixed parameters. Implementations are immutable and thread-safe.
class Codec {
 public:
  virtual ~Codec() = default;

  virtual CodecId id() const = 0;
  // Canonical spec string: parsing it yields a codec that writes identical streams.
  virtual std::string spec() const = 0;
  // True if decode(encode(x)) reproduces x bit for bit (NaN payloads, -0 and denormals included).
  virtual bool lossless() const = 0;
  virtual CodecParams params() const = 0;

  // Upper bound, in bytes, of the payload (header excluded) for `count` elements of `dtype`.
  virtual size_t max_payload_bytes(DType dtype, size_t count) const = 0;
  // The payload's size for regular data, when it depends only on dtype and count (casts, quant,
  // zfp fixed-rate): data the codec takes no special case for (finite values; for quant, blocks
  // whose range neither overflows nor is below its smallest scale). Other data takes more, up
  // to max_payload_bytes. nullopt: the size depends on the data.
  virtual std::optional<size_t> regular_payload_bytes(DType, size_t) const { return std::nullopt; }
  // Writes the payload of `in` into `out` (at least max_payload_bytes long); returns its size.
  virtual size_t encode(ConstTensorView in, std::span<std::byte> out,
                        const CompressOptions& options) const = 0;
  // Decodes a payload into `out`, whose dtype and count match the stream header. Throws
  // CorruptStream if the payload is malformed.
  virtual void decode(std::span<const std::byte> payload, TensorView out) const = 0;
};

// A parsed codec spec: a cheap, copyable handle to an immutable Codec.
//
// Spec grammar: NAME[:KEY=VALUE[,KEY=VALUE...]], e.g. "none", "bf16", "fp16",
// "quant:bits=8,block=64,round=nearest", "eb:abs=1e-4", "eb:rel=1e-3", "zfp:rate=8",
// "zfp:accuracy=1e-5", "mpc", "zstd:level=1", "exphuff". codec_help() lists every codec and
// parameter.
class CodecConfig {
 public:
  CodecConfig();  // "none"
  explicit CodecConfig(std::shared_ptr<const Codec> codec);

  // Throws InvalidArgument naming the spec and what is allowed.
  static CodecConfig parse(std::string_view spec);

  // Formatted once, at construction: collectives compare it across ranks on every call.
  const std::string& spec() const { return spec_; }
  CodecId id() const { return codec_->id(); }
  bool lossless() const { return codec_->lossless(); }
  const Codec& codec() const { return *codec_; }

 private:
  std::shared_ptr<const Codec> codec_;
  std::string spec_;
};

// Size of the stream header in bytes.
inline constexpr size_t kStreamHeaderBytes = 48;

// Upper bound, in bytes, of a whole stream (header + payload). Size buffers with it.
size_t max_compressed_bytes(const CodecConfig& config, DType dtype, size_t count);
inline size_t max_compressed_bytes(const CodecConfig& config, ConstTensorView view) {
  return max_compressed_bytes(config, view.dtype, view.count);
}
// Size of a whole stream of regular data (Codec::regular_payload_bytes), nullopt where the
// codec's size depends on the data.
std::optional<size_t> regular_compressed_bytes(const CodecConfig& config, DType dtype,
                                               size_t count);

// Compresses `in` into `out`; returns the stream size in bytes. Throws InvalidArgument if `out`
// is smaller than max_compressed_bytes(config, in).
size_t compress(const CodecConfig& config, ConstTensorView in, std::span<std::byte> out,
                const CompressOptions& options = {});
// Convenience overload that allocates the stream.
std::vector<std::byte> compress(const CodecConfig& config, ConstTensorView in,
                                const CompressOptions& options = {});

// Decompresses a whole stream into `out`. The stream's dtype and count must equal out's.
// Throws CorruptStream for a malformed stream and InvalidArgument for a mismatched `out`.
void decompress(std::span<const std::byte> stream, TensorView out);

// What a stream header says, after validation of header, size and checksum.
struct StreamInfo {
  CodecId codec = CodecId::kNone;
  DType dtype = DType::kF32;
  uint64_t count = 0;
  uint64_t payload_bytes = 0;
  std::string spec;  // canonical spec of the codec that wrote the stream

  uint64_t stream_bytes() const { return kStreamHeaderBytes + payload_bytes; }
};

// Validates the header of `stream` (magic, version, codec, parameters, declared sizes against
// stream.size(), checksum) and returns it. Bytes past stream_bytes() are ignored.
StreamInfo inspect(std::span<const std::byte> stream);

// Wraps a payload produced elsewhere (e.g. by plain libzfp with the same parameters) into a
// stream that decompress() accepts. Returns the stream size.
size_t frame_payload(const CodecConfig& config, DType dtype, size_t count,
                     std::span<const std::byte> payload, std::span<std::byte> out);

// Returns the payload part of a validated stream.
std::span<const std::byte> stream_payload(std::span<const std::byte> stream);

// Names of all codecs, and a multi-line description of their specs and parameters.
std::vector<std::string> codec_names();
std::string codec_help();

}  // namespace hycc
