// The C API's codecs: hycc_codec handles over CodecConfig, compress, inspect, decompress.
#include <cstring>
#include <span>
#include <string>

#include "capi/capi_internal.h"
#include "hycc/error.h"

using hycc::capi::codec_of;
using hycc::capi::guarded;
using hycc::capi::require;
using hycc::capi::require_buffer;
using hycc::capi::require_count;
using hycc::capi::to_dtype;

extern "C" {

hycc_status hycc_codec_create(const char* spec, hycc_codec** codec) {
  return guarded([&] {
    require(codec != nullptr, "hycc_codec_create", "codec (the result) is NULL");
    *codec = nullptr;
    require(spec != nullptr, "hycc_codec_create", "spec is NULL");
    *codec = new hycc_codec{hycc::CodecConfig::parse(spec)};
  });
}

void hycc_codec_destroy(hycc_codec* codec) { delete codec; }

const char* hycc_codec_spec(const hycc_codec* codec) {
  return codec == nullptr ? "" : codec->config.spec().c_str();
}

int hycc_codec_lossless(const hycc_codec* codec) {
  return codec != nullptr && codec->config.lossless() ? 1 : 0;
}

const char* hycc_codec_help(void) {
  static const std::string help = [] {
    try {
      return hycc::codec_help();
    } catch (...) {  // no memory: nothing may escape into C
      return std::string();
    }
  }();
  return help.c_str();
}

hycc_status hycc_max_compressed_bytes(const hycc_codec* codec, int dtype, size_t count,
                                      size_t* bytes) {
  return guarded([&] {
    const char* fn = "hycc_max_compressed_bytes";
    require(bytes != nullptr, fn, "bytes (the result) is NULL");
    const hycc::DType t = to_dtype(dtype, fn);
    require_count(count, t, fn, "tensor");
    *bytes = hycc::max_compressed_bytes(codec_of(codec, fn).config, t, count);
  });
}

hycc_status hycc_compress(const hycc_codec* codec, int dtype, size_t count, const void* in,
                          void* out, size_t capacity, uint64_t seed, size_t* bytes) {
  return guarded([&] {
    const char* fn = "hycc_compress";
    require(bytes != nullptr, fn, "bytes (the result) is NULL");
    *bytes = 0;
    const hycc::DType t = to_dtype(dtype, fn);
    require_buffer(in, count, t, fn, "in");
    require(out != nullptr, fn, "out is NULL");
    const hycc_codec& c = codec_of(codec, fn);
    *bytes = hycc::compress(c.config, hycc::ConstTensorView{t, count, in},
                            std::span<std::byte>(static_cast<std::byte*>(out), capacity),
                            hycc::CompressOptions{seed});
  });
}

hycc_status hycc_stream_inspect(const void* stream, size_t bytes, hycc_stream_info* info) {
  return guarded([&] {
    const char* fn = "hycc_stream_inspect";
    require(info != nullptr, fn, "info (the result) is NULL");
    require(stream != nullptr || bytes == 0, fn, "stream is NULL");
    const hycc::StreamInfo s =
        hycc::inspect(std::span<const std::byte>(static_cast<const std::byte*>(stream), bytes));
    require(s.spec.size() < sizeof(info->spec), fn, "the stream's spec does not fit in info");
    *info = hycc_stream_info{};
    info->dtype = static_cast<int>(s.dtype);
    info->count = s.count;
    info->payload_bytes = s.payload_bytes;
    info->stream_bytes = s.stream_bytes();
    std::memcpy(info->spec, s.spec.c_str(), s.spec.size() + 1);
  });
}

hycc_status hycc_decompress(const void* stream, size_t bytes, int dtype, size_t count, void* out) {
  return guarded([&] {
    const char* fn = "hycc_decompress";
    require(stream != nullptr || bytes == 0, fn, "stream is NULL");
    const hycc::DType t = to_dtype(dtype, fn);
    require_buffer(out, count, t, fn, "out");
    hycc::decompress(std::span<const std::byte>(static_cast<const std::byte*>(stream), bytes),
                     hycc::TensorView{t, count, out});
  });
}

}  // extern "C"
