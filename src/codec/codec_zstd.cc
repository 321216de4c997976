// "zstd": the general-purpose lossless baseline, through libzstd. The payload is exactly one zstd
// frame (magic 0xFD2FB528, content size recorded in the frame header, no dictionary) of the raw
// element bytes, so ZSTD_decompress or the zstd tool can read it as it is.
//
// Header parameters: byte 0 = compression level as a signed byte (-7..22; 0 is zstd's default
// level, 3), bytes 1..15 zero.
//
// Every call creates its own ZSTD_CCtx / ZSTD_DCtx: the codec stays immutable and thread-safe, at
// the price of one context allocation per call (libzstd sizes it from the level and input size).
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "codec/params_io.h"
#include "codec/registry.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

constexpr int kMinLevel = -7;
constexpr int kMaxLevel = 22;
constexpr int kDefaultLevel = 1;
constexpr std::string_view kHelp = "level=-7..22 (default 1): zstd compression level";

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

[[noreturn]] void fail(const std::string& what) { throw CorruptStream(tagged("codec:zstd", what)); }

class ZstdCodec final : public Codec {
 public:
  explicit ZstdCodec(int level) : level_(level) {}

  CodecId id() const override { return CodecId::kZstd; }
  std::string spec() const override { return "zstd:level=" + std::to_string(level_); }
  bool lossless() const override { return true; }
  CodecParams params() const override {
    CodecParams p;
    put_u8(p, 0, static_cast<uint8_t>(static_cast<int8_t>(level_)));
    return p;
  }

  size_t max_payload_bytes(DType dtype, size_t count) const override {
    const size_t bound = ZSTD_compressBound(count * dtype_size(dtype));
    // Inputs beyond what zstd accepts make the bound an error code: no buffer can hold them.
    return ZSTD_isError(bound) ? std::numeric_limits<size_t>::max() : bound;
  }

  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions&) const override {
    const std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
    if (!cctx) throw Error(tagged("codec:zstd", "cannot allocate a compression context"));
    check_compress(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level_));
    check_compress(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1));
    const size_t written = ZSTD_compress2(cctx.get(), out.data(), out.size(), in.data, in.bytes());
    check_compress(written);
    return written;
  }

  void decode(std::span<const std::byte> payload, TensorView out) const override {
    const void* src = payload.data();
    const size_t frame_bytes = ZSTD_findFrameCompressedSize(src, payload.size());
    if (ZSTD_isError(frame_bytes)) {
      fail(detail::concat("not a zstd frame: ", ZSTD_getErrorName(frame_bytes)));
    }
    if (frame_bytes != payload.size()) {
      fail(detail::concat("payload of ", payload.size(), " bytes holds a zstd frame of ",
                          frame_bytes, " bytes and something after it"));
    }
    uint32_t magic = 0;
    std::memcpy(&magic, src, sizeof(magic));  // frame_bytes >= 4 once the frame was found
    if (magic != ZSTD_MAGICNUMBER) fail("skippable frame instead of a zstd data frame");
    const unsigned long long content = ZSTD_getFrameContentSize(src, payload.size());
    if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR) {
      fail("zstd frame does not record its content size");
    }
    if (content != out.bytes()) {
      fail(detail::concat("zstd frame holds ", content, " bytes, expected ", out.bytes()));
    }
    const std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
    if (!dctx) throw Error(tagged("codec:zstd", "cannot allocate a decompression context"));
    const size_t produced =
        ZSTD_decompressDCtx(dctx.get(), out.data, out.bytes(), src, payload.size());
    if (ZSTD_isError(produced)) {
      fail(detail::concat("decompression failed: ", ZSTD_getErrorName(produced)));
    }
    if (produced != out.bytes()) {
      fail(detail::concat("zstd frame decoded to ", produced, " bytes, expected ", out.bytes()));
    }
  }

 private:
  // A compression failure is not the caller's fault: the output is sized by max_payload_bytes.
  static void check_compress(size_t result) {
    if (ZSTD_isError(result)) {
      throw Error(tagged("codec:zstd", "compression failed: ", ZSTD_getErrorName(result)));
    }
  }

  int level_;
};

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  const int level = args.get_int("level", kDefaultLevel, kMinLevel, kMaxLevel);
  args.finish(kHelp);
  return std::make_shared<ZstdCodec>(level);
}

std::shared_ptr<const Codec> from_params(const CodecParams& params) {
  const int level = static_cast<int8_t>(get_u8(params, 0));
  if (level < kMinLevel || level > kMaxLevel) {
    throw CorruptStream(tagged("codec:zstd", "invalid level ", level, " in stream header (",
                               kMinLevel, "..", kMaxLevel, ")"));
  }
  require_unused_params_zero(params, 1, "codec:zstd");
  return std::make_shared<ZstdCodec>(level);
}

}  // namespace

const CodecEntry& zstd_entry() {
  static const CodecEntry e{"zstd", CodecId::kZstd, kHelp, from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
