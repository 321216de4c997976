#include "codec/device_codecs.h"

#include "codec/params_io.h"

namespace hycc::codec {

bool has_device_kernels(const CodecConfig& config) {
  switch (config.id()) {
    case CodecId::kNone:
    case CodecId::kBF16:
    case CodecId::kFP16:
    case CodecId::kQuant:
    case CodecId::kEb:
    case CodecId::kMpc:
      return true;
    case CodecId::kZfp:  // fixed rate only (codec_zfp.cc: parameter byte 0 is 1)
      return get_u8(config.codec().params(), 0) == 1;
    default:
      return false;
  }
}

}  // namespace hycc::codec
