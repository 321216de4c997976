// Which codecs have a device implementation (codec/cuda/): answered without CUDA, so that the
// CUDA build's device_supports() and the host emulation of the device collectives accept the
// same set.
#pragma once

#include "hycc/codec.h"

namespace hycc::codec {

// none, bf16, fp16, quant, eb, mpc and zfp fixed rate.
bool has_device_implementation(const CodecConfig& config);

}  // namespace hycc::codec
