// Which codecs have device kernels (codec/cuda/): answered without CUDA, so that the CUDA build's
// device_supports() and the tests of the host emulation agree. The other codecs run on the device
// API too, encoded and decoded by the CPU codec from host copies.
#pragma once

#include "hycc/codec.h"

namespace hycc::codec {

// none, bf16, fp16, quant, eb, mpc, exphuff and zfp (fixed rate and fixed accuracy).
bool has_device_kernels(const CodecConfig& config);

// Codecs whose device decoder checks a payload's structure on the device (quant's block
// headers), so that a stream-ordered call can learn of a malformed payload later instead of
// waiting for the check (decode_device_deferred).
bool checks_payloads_on_device(const CodecConfig& config);

}  // namespace hycc::codec
