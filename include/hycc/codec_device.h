// Codecs on GPU buffers (CUDA). No CUDA header is needed to include this file: a CUDA stream is
// passed as DeviceStream, which is cudaStream_t (nullptr: the legacy default stream).
//
// The device functions write and read *payloads*: exactly the bytes that follow the 48-byte
// header of the stream compress() writes for the same input, parameters and seed (compare with
// stream_payload(compress(...))). The stream header's checksum is a sequential hash, which a GPU
// cannot compute at memory speed, so a device payload carries no header: both sides know the
// codec from the collective's arguments. frame_payload() turns a payload copied to the host
// into a regular stream.
//
// Codecs with device kernels: "none", "bf16", "fp16", "quant" (both roundings, stochastic
// rounding draws the same noise as the CPU), "eb" (abs and rel), "mpc" (every dim),
// "zfp:rate=R" and "zfp:accuracy=T"; device_supports() says which. The other codec ("zstd") takes
// the host path: the device data is copied to the host, the CPU codec runs there and the result
// is copied back (the same payload, at the CPU codec's speed). zfp inputs holding NaN or
// infinities take it too (exception or raw layout), and so do such payloads when decoded.
// In a build without CUDA (see device_codecs_built()) every function but the queries throws
// Unavailable. Buffers are plain device allocations (cudaMalloc). Calls are stream-ordered.
// "none", "bf16" and "fp16", whose payload size depends only on dtype and count, return at once
// (the payload is queued, not done: read it after an event or a synchronization of `stream`);
// the other codecs return only when the payload size is known, or the payload checked (they
// synchronize on `stream`).
#pragma once

#include <cstddef>

#include "hycc/codec.h"
#include "hycc/device.h"
#include "hycc/dtype.h"

namespace hycc {

// True if `config` runs in device kernels; false for the codecs that take the host path.
bool device_supports(const CodecConfig& config);

// Compresses `in` (device memory) into the payload at `out` (device memory, at least
// config.codec().max_payload_bytes(in.dtype, in.count) bytes); returns the payload size.
// Throws InvalidArgument for a short `out`; Unavailable without CUDA or device, and for CUDA
// failures (with CUDA's error string).
size_t encode_device(const CodecConfig& config, ConstTensorView in, void* out, size_t out_bytes,
                     const CompressOptions& options = {}, DeviceStream stream = nullptr);

// Decodes a payload (device memory) into `out` (device memory) whose dtype and count are those
// the payload was encoded from. Throws CorruptStream for a malformed payload (`out` may then be
// partly written), Unavailable as encode_device.
void decode_device(const CodecConfig& config, const void* payload, size_t payload_bytes,
                   TensorView out, DeviceStream stream = nullptr);

namespace detail {
// decode_device without waiting, for the codecs that check payloads on the device
// (checks_payloads_on_device in src/codec/device_codecs.h): a malformed payload makes the device
// set *failed (pinned host memory) to 1 once the check has run, and `out` is then undefined. A
// wrong payload size still throws CorruptStream at once. Other codecs: decode_device.
void decode_device_deferred(const CodecConfig& config, const void* payload, size_t payload_bytes,
                            TensorView out, DeviceStream stream, uint32_t* failed);
}  // namespace detail

}  // namespace hycc
