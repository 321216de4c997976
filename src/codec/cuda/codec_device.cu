// The device codec API (include/hycc/codec_device.h) with CUDA: parameter checks, dispatch to
// the kernels, and the host path: the CPU codec on host copies, for the codec without kernels
// (zstd) and for zfp tensors with NaN or infinities (exception and raw layouts, rare in training
// data).
#include <cuda_runtime.h>

#include <array>
#include <mutex>
#include <vector>

#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/device_codecs.h"
#include "codec/eb_reference.h"
#include "codec/params_io.h"
#include "codec/zfp_fixed_rate.h"
#include "common/host_syncs.h"
#include "hycc/codec_device.h"

namespace hycc {
namespace {

using codec::cuda::copy_to_host;

using codec::cuda::quant_params;

int mpc_dim(const CodecConfig& config) { return codec::get_u8(config.codec().params(), 0); }
size_t exphuff_block(const CodecConfig& config) {
  return codec::get_u32(config.codec().params(), 0);
}

// The quantizer of "eb" for `in`: abs takes the spec's bound; rel resolves it from the tensor's
// finite range (codec_eb.cc's parameter bytes: [0] 1 = rel, [8, 16) the spec's X).
codec::eb::Quantizer eb_quantizer(const CodecConfig& config, ConstTensorView in,
                                  cudaStream_t stream) {
  const CodecParams p = config.codec().params();
  const double value = codec::get_f64(p, 8);
  if (codec::get_u8(p, 0) == 0) return codec::eb::make_quantizer(value, 0.0f);
  const codec::cuda::EbRange r = codec::cuda::eb_finite_range(in, stream);
  const double bound = r.any ? codec::eb::relative_bound(value, r.lo, r.hi) : 0.0;
  return codec::eb::make_quantizer(bound, bound > 0 ? 0.0f : r.first);
}

// codec_zfp.cc's parameter bytes: [0] the mode (1 fixed rate, 2 fixed accuracy), [4, 8) the
// bits per block (rate) or the tolerance's exponent (accuracy, two's complement).
bool zfp_accuracy(const CodecConfig& config) {
  return codec::get_u8(config.codec().params(), 0) == 2;
}
uint32_t zfp_block_bits(const CodecConfig& config) {
  return codec::get_u32(config.codec().params(), 4);
}
int zfp_minexp(const CodecConfig& config) { return static_cast<int32_t>(zfp_block_bits(config)); }

void require_device() {
  if (!device_runs_kernels()) {
    throw Unavailable(tagged("codec:device", device_unavailable_reason()));
  }
}

// The CPU codec on host copies: for codecs without kernels, and for payloads the kernels do not
// produce (zfp with non-finite values).
size_t encode_on_host(const CodecConfig& config, ConstTensorView in, void* out, size_t out_bytes,
                      const CompressOptions& options, cudaStream_t stream) {
  std::vector<uint64_t> host_in((in.bytes() + 7) / 8);
  copy_to_host(host_in.data(), in.data, in.bytes(), stream);
  std::vector<std::byte> payload(out_bytes);
  const size_t n = config.codec().encode({in.dtype, in.count, host_in.data()}, payload, options);
  HYCC_CUDA_CHECK(cudaMemcpyAsync(out, payload.data(), n, cudaMemcpyHostToDevice, stream));
  count_host_sync();
  HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));
  return n;
}

void decode_on_host(const CodecConfig& config, const void* payload, size_t payload_bytes,
                    TensorView out, cudaStream_t stream) {
  std::vector<std::byte> host_payload(payload_bytes);
  copy_to_host(host_payload.data(), payload, payload_bytes, stream);
  std::vector<uint64_t> host_out((out.bytes() + 7) / 8);
  config.codec().decode(host_payload, {out.dtype, out.count, host_out.data()});
  HYCC_CUDA_CHECK(
      cudaMemcpyAsync(out.data, host_out.data(), out.bytes(), cudaMemcpyHostToDevice, stream));
  count_host_sync();
  HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

namespace codec::cuda {

QuantParams quant_params(const CodecConfig& config) {
  const CodecParams p = config.codec().params();
  return {get_u8(p, 0), get_u32(p, 4), get_u8(p, 1) == 1, get_u8(p, 2) == 1};
}

void* scratch(size_t bytes, cudaStream_t stream) {
  struct Buffer {
    cudaStream_t stream = nullptr;
    void* data = nullptr;
    size_t bytes = 0;
    uint64_t used = 0;
    void release() {
      if (data != nullptr) {
        count_host_sync();  // cudaFree waits for the device
        cudaFree(data);
      }
      data = nullptr;
      bytes = 0;
    }
  };
  struct Buffers {
    std::array<Buffer, 8> by_stream;
    uint64_t clock = 0;
    ~Buffers() {
      for (Buffer& b : by_stream) b.release();
    }
  };
  thread_local Buffers buffers;
  Buffer* buffer = nullptr;
  for (Buffer& b : buffers.by_stream) {
    if (b.data != nullptr && b.stream == stream) buffer = &b;
  }
  if (buffer == nullptr) {  // a free entry, or the least recently used
    buffer = &buffers.by_stream[0];
    for (Buffer& b : buffers.by_stream) {
      if (b.data == nullptr || b.used < buffer->used) buffer = &b;
      if (b.data == nullptr) break;
    }
    buffer->release();
    buffer->stream = stream;
  }
  buffer->used = ++buffers.clock;
  if (bytes > buffer->bytes) {
    buffer->release();
    HYCC_CUDA_CHECK(cudaMalloc(&buffer->data, bytes));
    buffer->bytes = bytes;
  }
  return buffer->data;
}

void copy_to_host(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  // Into pageable memory the copy itself waits (counted), then the stream.
  count_host_sync();
  HYCC_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  count_host_sync();
  HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace codec::cuda

bool device_supports(const CodecConfig& config) { return codec::has_device_kernels(config); }

size_t encode_device(const CodecConfig& config, ConstTensorView in, void* out, size_t out_bytes,
                     const CompressOptions& options, DeviceStream stream) {
  const size_t need = config.codec().max_payload_bytes(in.dtype, in.count);
  if (out_bytes < need) {
    throw InvalidArgument(tagged("codec:device", "output of ", out_bytes, " bytes, '",
                                 config.spec(), "' needs up to ", need, " for ", in.count,
                                 " elements"));
  }
  require_device();
  if (!device_supports(config)) return encode_on_host(config, in, out, out_bytes, options, stream);
  auto* dst = static_cast<uint8_t*>(out);
  switch (config.id()) {
    case CodecId::kNone:
      if (in.count != 0) {
        HYCC_CUDA_CHECK(
            cudaMemcpyAsync(out, in.data, in.bytes(), cudaMemcpyDeviceToDevice, stream));
      }
      return in.bytes();  // known without waiting: the payload is queued, not done
    case CodecId::kBF16:
    case CodecId::kFP16:
      codec::cuda::cast_encode(config.id() == CodecId::kBF16 ? DType::kBF16 : DType::kF16, in, out,
                               stream);
      return in.count * 2;
    case CodecId::kQuant:
      return codec::cuda::quant_encode(quant_params(config), in, dst, options.seed, stream);
    case CodecId::kEb:
      if (in.count == 0) return 0;
      return codec::cuda::eb_encode(eb_quantizer(config, in, stream), in, dst, stream);
    case CodecId::kMpc:
      return codec::cuda::mpc_encode(mpc_dim(config), in, dst, stream);
    case CodecId::kExpHuff:
      return codec::cuda::exphuff_encode(exphuff_block(config), in, dst, stream);
    default: {
      if (zfp_accuracy(config)) {
        const codec::cuda::ZfpAccuracyEncoded r =
            codec::cuda::zfp_accuracy_encode(zfp_minexp(config), in, dst, stream);
        if (r.non_finite != 0) return encode_on_host(config, in, out, out_bytes, options, stream);
        count_host_sync();
        HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));
        return r.bytes;
      }
      const uint32_t block_bits = zfp_block_bits(config);
      if (codec::cuda::zfp_encode(block_bits, in, dst, stream) != 0) {
        return encode_on_host(config, in, out, out_bytes, options, stream);
      }
      return codec::zfp::fixed_rate_bytes(in.count, block_bits);
    }
  }
}

void detail::decode_device_deferred(const CodecConfig& config, const void* payload,
                                    size_t payload_bytes, TensorView out, DeviceStream stream,
                                    uint32_t* failed) {
  if (!codec::checks_payloads_on_device(config) || failed == nullptr) {
    decode_device(config, payload, payload_bytes, out, stream);
    return;
  }
  require_device();
  codec::cuda::quant_decode(quant_params(config), static_cast<const uint8_t*>(payload),
                            payload_bytes, out, stream, failed);
}

void decode_device(const CodecConfig& config, const void* payload, size_t payload_bytes,
                   TensorView out, DeviceStream stream) {
  require_device();
  if (!device_supports(config)) return decode_on_host(config, payload, payload_bytes, out, stream);
  const auto wrong_size = [&](size_t expected) {
    throw CorruptStream(tagged("codec:" + config.spec(), "device decode: payload of ",
                               payload_bytes, " bytes, expected ", expected));
  };
  const auto* src = static_cast<const uint8_t*>(payload);
  switch (config.id()) {
    case CodecId::kNone:
      if (payload_bytes != out.bytes()) wrong_size(out.bytes());
      if (out.count != 0) {
        HYCC_CUDA_CHECK(
            cudaMemcpyAsync(out.data, payload, out.bytes(), cudaMemcpyDeviceToDevice, stream));
      }
      return;  // nothing to check on the device: queued, not waited for
    case CodecId::kBF16:
    case CodecId::kFP16:
      if (payload_bytes != out.count * 2) wrong_size(out.count * 2);
      codec::cuda::cast_decode(config.id() == CodecId::kBF16 ? DType::kBF16 : DType::kF16, payload,
                               out, stream);
      return;
    case CodecId::kQuant:
      codec::cuda::quant_decode(quant_params(config), src, payload_bytes, out, stream);
      break;
    case CodecId::kEb:
      codec::cuda::eb_decode(src, payload_bytes, out, stream);
      break;
    case CodecId::kMpc:
      codec::cuda::mpc_decode(mpc_dim(config), src, payload_bytes, out, stream);
      break;
    case CodecId::kExpHuff:
      codec::cuda::exphuff_decode(exphuff_block(config), src, payload_bytes, out, stream);
      break;
    default: {
      if (zfp_accuracy(config)) {
        if (!codec::cuda::zfp_accuracy_decode(zfp_minexp(config), src, payload_bytes, out,
                                              stream)) {
          decode_on_host(config, payload, payload_bytes, out, stream);  // not the plain layout
          return;
        }
        break;
      }
      const uint32_t block_bits = zfp_block_bits(config);
      if (payload_bytes != codec::zfp::fixed_rate_bytes(out.count, block_bits)) {
        decode_on_host(config, payload, payload_bytes, out, stream);  // exceptions or raw layout
        return;
      }
      codec::cuda::zfp_decode(block_bits, src, payload_bytes, out, stream);
    }
  }
  count_host_sync();
  HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace hycc
