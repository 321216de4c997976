#include "codec/device_codecs.h"

namespace hycc::codec {

bool checks_payloads_on_device(const CodecConfig& config) { return config.id() == CodecId::kQuant; }

bool has_device_kernels(const CodecConfig& config) {
  switch (config.id()) {
    case CodecId::kNone:
    case CodecId::kBF16:
    case CodecId::kFP16:
    case CodecId::kQuant:
    case CodecId::kEb:
    case CodecId::kMpc:
    case CodecId::kZfp:
    case CodecId::kExpHuff:
      return true;
    default:
      return false;
  }
}

}  // namespace hycc::codec
