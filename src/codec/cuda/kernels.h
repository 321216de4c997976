// Launchers of the CUDA codec kernels (src/codec/cuda/*.cu), called by codec_device.cu. All
// pointers are device memory; every launcher is ordered on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "codec/block/eb_block.h"
#include "hycc/codec.h"
#include "hycc/dtype.h"

namespace hycc::codec::cuda {

// "bf16"/"fp16": payload = count 16-bit values of `target`.
void cast_encode(DType target, ConstTensorView in, void* out, cudaStream_t stream);
void cast_decode(DType target, const void* payload, TensorView out, cudaStream_t stream);
// A ring hop in one pass: element i of `out` (own.count values of `target`) is the cast of
// decoded[i] + own[i] in float32, where decoded[i] is element i of the cast payload decoded
// into `wire` and widened, exactly as cast_decode into `wire`, an addition in float32 and
// cast_encode of the sum would give it.
void cast_hop(DType target, const void* payload, DType wire, ConstTensorView own, void* out,
              cudaStream_t stream);

struct QuantParams {
  int bits = 8;
  size_t block = 64;
  bool stochastic = false;
  bool rotate = false;  // rotate=hadamard
};

// The parameters of a "quant" codec (its stream-header parameter bytes).
QuantParams quant_params(const CodecConfig& config);

// "quant": returns the payload size.
size_t quant_encode(const QuantParams& p, ConstTensorView in, uint8_t* out, uint64_t seed,
                    cudaStream_t stream);
// Throws CorruptStream where the payload is malformed (out may then be partly written); with
// `failed` (pinned host memory), a malformed block header sets *failed to 1 on the device
// instead, and the host does not wait.
void quant_decode(const QuantParams& p, const uint8_t* payload, size_t payload_bytes,
                  TensorView out, cudaStream_t stream, uint32_t* failed = nullptr);

// The ring's middle hop for quant (rotate=none, blocks of up to 256 values): the payload's
// own.count values decoded into `wire` and widened, plus `own` in float32, encoded with `seed`
// into `out` (same geometry, the payload's size), in one kernel: the bits decode_accumulate
// then quant_encode give. Malformed headers: with `failed`, *failed becomes 1 (not waited for);
// without, the host waits for the check and false is returned. False (nothing written) too
// where there is no fused kernel for the parameters or the size is wrong.
bool quant_hop(const QuantParams& p, const uint8_t* payload, size_t payload_bytes, DType wire,
               ConstTensorView own, uint8_t* out, uint64_t seed, cudaStream_t stream,
               uint32_t* failed);

// "zfp:rate=R", plain layout (every value finite): writes the fixed-rate bitstream and returns
// the number of non-finite values met (then the payload is not valid: the caller falls back).
uint64_t zfp_encode(uint32_t block_bits, ConstTensorView in, uint8_t* out, cudaStream_t stream);
// Decodes a plain-layout payload of exactly fixed_rate_bytes(count, block_bits) bytes.
void zfp_decode(uint32_t block_bits, const uint8_t* payload, size_t payload_bytes, TensorView out,
                cudaStream_t stream);

// "zfp:accuracy=T" (tolerance 2^minexp), plain layout: writes the bitstream and returns its size,
// or the number of non-finite values met (then nothing valid is written: the caller falls back).
struct ZfpAccuracyEncoded {
  uint64_t bytes = 0;
  uint64_t non_finite = 0;
};
ZfpAccuracyEncoded zfp_accuracy_encode(int minexp, ConstTensorView in, uint8_t* out,
                                       cudaStream_t stream);
// Decodes a plain-layout payload and returns true; false (nothing written) for any other payload
// (exceptions, raw layout or malformed: the caller takes the host path, which tells them apart).
bool zfp_accuracy_decode(int minexp, const uint8_t* payload, size_t payload_bytes, TensorView out,
                         cudaStream_t stream);

// "eb": the finite range and the first finite value of a tensor (what a rel bound needs).
struct EbRange {
  bool any = false;  // false: no finite element, lo, hi and first are 0
  float lo = 0, hi = 0, first = 0;
};
EbRange eb_finite_range(ConstTensorView in, cudaStream_t stream);
// "eb" under the resolved quantizer: writes the payload (preamble included), returns its size.
size_t eb_encode(const eb::Quantizer& qz, ConstTensorView in, uint8_t* out, cudaStream_t stream);
// Throws CorruptStream where the payload is malformed (out may then be partly written).
void eb_decode(const uint8_t* payload, size_t payload_bytes, TensorView out, cudaStream_t stream);

// "mpc:dim=D": returns the payload size.
size_t mpc_encode(int dim, ConstTensorView in, uint8_t* out, cudaStream_t stream);
// Throws CorruptStream where the payload is malformed (out may then be partly written).
void mpc_decode(int dim, const uint8_t* payload, size_t payload_bytes, TensorView out,
                cudaStream_t stream);

// "exphuff:block=B": returns the payload size.
size_t exphuff_encode(size_t block, ConstTensorView in, uint8_t* out, cudaStream_t stream);
// Throws CorruptStream where the payload is malformed (as the CPU decoder; out may then be partly
// written).
void exphuff_decode(size_t block, const uint8_t* payload, size_t payload_bytes, TensorView out,
                    cudaStream_t stream);

}  // namespace hycc::codec::cuda
