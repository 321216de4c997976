// "quant" on the device (format at the top of src/codec/codec_quant.cc). One warp per block of
// the codec: the lanes scan the block's order keys and reduce them, then lane j takes words
// j, j + 32, ... of the segment layout. The per-value and per-word arithmetic is that of
// codec/block/quant_block.h, the functions the CPU codec runs.
//
// Encoding: (1) scan: min/scale or raw per block; (2) an exclusive scan of the raw flags gives
// every raw block its ordinal, i.e. its place in the raw area; (3) headers, codes and raw copies.
// Decoding: (1) check every header and flag the raw ones; (2) the same scan; the host checks the
// payload size against the raw count; (3) decode, checking the ordinals in the raw headers.
// rotate=hadamard: before (1), one warp per full block rotates it into a float scratch tensor
// (codec/block/hadamard.h, a stage at a time, the lanes taking its butterflies) and flags blocks
// too large to rotate, which (1) makes raw; (1) and (3) read the rotated values, raw copies the
// input. Decoding dequantizes a rotated block into the scratch and rotates it back there.
#include <cub/device/device_scan.cuh>

#include "codec/block/hadamard.h"
#include "codec/block/quant_block.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"

namespace hycc::codec::cuda {
namespace {

using quant::BlockQuant;
using quant::kRawMarker;
using quant::round_up8;

constexpr int kWarpsPerBlock = kThreads / kWarp;

using Geometry = quant::PayloadLayout;

struct DeviceQuant {
  float min, scale, inv_scale;
  uint32_t raw;
};

__device__ inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
__device__ inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// The values a block is quantized from: the input, or for a rotated block the scratch.
struct Source {
  const void* in;
  DType dtype;
  const float* rotated;  // nullptr: no rotation
  __device__ bool rotates(const Geometry& g, uint64_t b) const {
    return rotated != nullptr && g.elements(b) == g.block;
  }
  __device__ float value(const Geometry& g, uint64_t b, uint64_t i) const {
    return rotates(g, b) ? rotated[b * g.block + i] : load_float(in, dtype, b * g.block + i);
  }
};

// The butterflies of a block of n, stage after stage, the warp's lanes taking each stage's.
__device__ void warp_hadamard_stages(float* x, uint64_t n, unsigned lane) {
  __syncwarp();
  for (uint64_t h = n / 2; h >= 1; h /= 2) {
    for (uint64_t t = lane; t < n / 2; t += kWarp) quant::hadamard_butterfly(x, h, t);
    __syncwarp();
  }
}

// One warp per full block: its values into rotated[], rotated; too_large[b] where a value is
// too large to rotate (the block then goes raw).
__global__ void rotate_kernel(Geometry g, const void* in, DType dtype, float* rotated,
                              uint32_t* too_large) {
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks || g.elements(b) != g.block) return;
  const uint64_t n = g.block;
  float* x = rotated + b * n;
  bool ok = true;
  for (uint64_t i = lane; i < n; i += kWarp) {
    x[i] = load_float(in, dtype, b * n + i);
    ok = ok && quant::rotatable(x[i]);
  }
  const bool all_ok = __all_sync(0xffffffffu, ok) != 0;
  if (lane == 0) too_large[b] = all_ok ? 0u : 1u;
  if (!all_ok) return;
  warp_hadamard_stages(x, n, lane);
  const float scale = quant::hadamard_forward_scale(n);
  for (uint64_t i = lane; i < n; i += kWarp) x[i] *= scale;
}

__global__ void scan_kernel(Geometry g, Source src, const uint32_t* too_large, float max_code,
                            DeviceQuant* quants, uint32_t* raw_flags) {
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks) return;
  const uint64_t n = g.elements(b);
  quant::KeyRange keys;
  for (uint64_t i = lane; i < n; i += kWarp) keys.add(quant::order_key(src.value(g, b, i)));
  for (int d = kWarp / 2; d > 0; d /= 2) {
    const int32_t other_lo = __shfl_xor_sync(0xffffffffu, keys.lo, d);
    const int32_t other_hi = __shfl_xor_sync(0xffffffffu, keys.hi, d);
    keys.merge(other_lo, other_hi);
  }
  if (lane != 0) return;
  BlockQuant q = quant::quant_from_keys(keys, max_code);
  q.raw = q.raw || (src.rotates(g, b) && too_large[b] != 0);
  quants[b] = {q.min, q.scale, q.inv_scale, q.raw ? 1u : 0u};
  raw_flags[b] = q.raw ? 1u : 0u;
}

// Block element i as the codec sees it: the (rotated) value, or the block min as padding.
struct BlockValues {
  Source src;
  Geometry g;
  uint64_t b;
  uint64_t n;
  float pad;
  __device__ float operator[](size_t i) const { return i < n ? src.value(g, b, i) : pad; }
};

template <int kBits, bool kStochastic>
__global__ void encode_kernel(Geometry g, Source source, const DeviceQuant* quants,
                              const uint32_t* ordinals, uint64_t noise_key, uint8_t* out) {
  const void* in = source.in;
  const DType dtype = source.dtype;
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks) return;
  const uint64_t begin = b * g.block, n = g.elements(b), n8 = round_up8(n);
  const size_t elem = dtype_size(dtype);
  uint8_t* header = out + g.header_offset(b);
  uint8_t* codes = out + g.codes_offset(b);
  const DeviceQuant dq = quants[b];
  if (dq.raw) {
    if (lane == 0) {
      store_u32(header, ordinals[b]);
      store_u32(header + 4, kRawMarker);
    }
    const uint64_t code_bytes = n8 / 8 * kBits;
    for (uint64_t i = lane; i < code_bytes; i += kWarp) codes[i] = 0;
    const auto* src = static_cast<const uint8_t*>(in) + begin * elem;
    uint8_t* dst = out + g.raw_offset(ordinals[b], elem);
    for (uint64_t i = lane; i < n * elem; i += kWarp) dst[i] = src[i];
    return;
  }
  if (lane == 0) {
    store_u32(header, f32_to_bits(dq.min));
    store_u32(header + 4, f32_to_bits(dq.scale));
  }
  BlockQuant q;
  q.raw = false;
  q.min = dq.min;
  q.scale = dq.scale;
  q.inv_scale = dq.inv_scale;
  const BlockValues x{source, g, b, n, dq.min};
  const auto noise = [noise_key, begin](size_t i) {
    return quant::stochastic_noise(noise_key, begin + i);
  };
  const size_t len = n8 / quant::Packing<kBits>::kPer;
  for (size_t j = lane; j < len; j += kWarp) {
    quant::quantize_word<kBits, kStochastic>(x, len, j, q, noise, codes);
  }
}

// Flags raw blocks and checks the others' headers (as QuantCodec::decode does).
__global__ void check_kernel(Geometry g, const uint8_t* payload, float max_code,
                             uint32_t* raw_flags, uint32_t* error) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b >= g.blocks) return;
  const uint8_t* header = payload + g.header_offset(b);
  const uint32_t scale_bits = load_u32(header + 4);
  raw_flags[b] = scale_bits == kRawMarker ? 1u : 0u;
  if (scale_bits == kRawMarker) return;
  const float lo = bits_to_f32(load_u32(header)), scale = bits_to_f32(scale_bits);
  const bool scale_ok = scale == 0 ? scale_bits == 0 : (scale >= FLT_MIN && scale <= FLT_MAX);
  if (!(fabsf(lo) <= FLT_MAX) || !scale_ok || !quant::decodes_finite(lo, scale, max_code)) {
    atomicOr(error, 1u);
  }
}

template <int kBits>
__global__ void decode_kernel(Geometry g, const uint8_t* payload, const uint32_t* ordinals,
                              void* out, DType dtype, float* rotated, uint32_t* error) {
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks) return;
  const uint64_t begin = b * g.block, n = g.elements(b), n8 = round_up8(n);
  const size_t elem = dtype_size(dtype);
  const uint8_t* header = payload + g.header_offset(b);
  if (load_u32(header + 4) == kRawMarker) {
    if (lane == 0 && load_u32(header) != ordinals[b]) atomicOr(error, 2u);
    const uint8_t* src = payload + g.raw_offset(ordinals[b], elem);
    auto* dst = static_cast<uint8_t*>(out) + begin * elem;
    for (uint64_t i = lane; i < n * elem; i += kWarp) dst[i] = src[i];
    return;
  }
  const float lo = bits_to_f32(load_u32(header)), scale = bits_to_f32(load_u32(header + 4));
  const uint8_t* codes = payload + g.codes_offset(b);
  const size_t len = n8 / quant::Packing<kBits>::kPer;
  if (rotated == nullptr || n != g.block) {
    const auto store = [out, dtype, begin, n](size_t i, float v) {
      if (i < n) store_float(v, out, dtype, begin + i);
    };
    for (size_t j = lane; j < len; j += kWarp) {
      quant::dequantize_word<kBits>(codes, len, j, lo, scale, store);
    }
    return;
  }
  float* x = rotated + begin;
  const float inverse = quant::hadamard_inverse_scale(n);
  const auto store = [x, inverse](size_t i, float v) { x[i] = v * inverse; };
  for (size_t j = lane; j < len; j += kWarp) {
    quant::dequantize_word<kBits>(codes, len, j, lo, scale, store);
  }
  warp_hadamard_stages(x, n, lane);
  for (uint64_t i = lane; i < n; i += kWarp) store_float(x[i], out, dtype, begin + i);
}

using EncodeKernel = void (*)(Geometry, Source, const DeviceQuant*, const uint32_t*, uint64_t,
                              uint8_t*);
using DecodeKernel = void (*)(Geometry, const uint8_t*, const uint32_t*, void*, DType, float*,
                              uint32_t*);

template <int kBits>
EncodeKernel encode_for(bool stochastic) {
  return stochastic ? encode_kernel<kBits, true> : encode_kernel<kBits, false>;
}

EncodeKernel pick_encode(int bits, bool stochastic) {
  switch (bits) {
    case 1:
      return encode_for<1>(stochastic);
    case 2:
      return encode_for<2>(stochastic);
    case 3:
      return encode_for<3>(stochastic);
    case 4:
      return encode_for<4>(stochastic);
    case 5:
      return encode_for<5>(stochastic);
    case 6:
      return encode_for<6>(stochastic);
    case 7:
      return encode_for<7>(stochastic);
    default:
      return encode_for<8>(stochastic);
  }
}

DecodeKernel pick_decode(int bits) {
  switch (bits) {
    case 1:
      return decode_kernel<1>;
    case 2:
      return decode_kernel<2>;
    case 3:
      return decode_kernel<3>;
    case 4:
      return decode_kernel<4>;
    case 5:
      return decode_kernel<5>;
    case 6:
      return decode_kernel<6>;
    case 7:
      return decode_kernel<7>;
    default:
      return decode_kernel<8>;
  }
}

// Scratch: per-block quantization (encoding only), raw flags, ordinals, CUB's temporary storage,
// two result words, and for rotate=hadamard the rotated values and the too-large flags, 256-byte
// aligned pieces of one allocation.
struct Scratch {
  DeviceQuant* quants = nullptr;
  uint32_t* raw_flags = nullptr;
  uint32_t* ordinals = nullptr;
  uint32_t* result = nullptr;  // [0] error flags, [1] unused
  void* cub_temp = nullptr;
  size_t cub_bytes = 0;
  float* rotated = nullptr;  // blocks * block floats
  uint32_t* too_large = nullptr;

  Scratch(const Geometry& g, bool with_quants, bool rotate) {
    const uint64_t blocks = g.blocks;
    HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(
        nullptr, cub_bytes, static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
        static_cast<int64_t>(blocks)));
    const auto align = [](size_t v) { return (v + 255) / 256 * 256; };
    const size_t quant_bytes = with_quants ? align(blocks * sizeof(DeviceQuant)) : 0;
    const size_t flag_bytes = align(blocks * 4);
    const size_t rotated_bytes = rotate ? align(blocks * g.block * 4) + flag_bytes : 0;
    const size_t fixed = quant_bytes + 2 * flag_bytes + 256 + align(cub_bytes);
    auto* base = static_cast<uint8_t*>(scratch(fixed + rotated_bytes));
    quants = reinterpret_cast<DeviceQuant*>(base);
    raw_flags = reinterpret_cast<uint32_t*>(base + quant_bytes);
    ordinals = reinterpret_cast<uint32_t*>(base + quant_bytes + flag_bytes);
    result = reinterpret_cast<uint32_t*>(base + quant_bytes + 2 * flag_bytes);
    cub_temp = base + quant_bytes + 2 * flag_bytes + 256;
    if (rotate) {
      rotated = reinterpret_cast<float*>(base + fixed);
      too_large = reinterpret_cast<uint32_t*>(base + fixed + align(blocks * g.block * 4));
    }
  }

  void scan(uint64_t blocks, cudaStream_t stream) {
    HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp, cub_bytes, raw_flags, ordinals,
                                                  static_cast<int64_t>(blocks), stream));
  }

  // Number of raw blocks and whether the last block is raw.
  std::pair<uint64_t, bool> raw_count(uint64_t blocks, cudaStream_t stream) const {
    uint32_t last[2];
    copy_to_host(&last[0], ordinals + blocks - 1, 4, stream);
    copy_to_host(&last[1], raw_flags + blocks - 1, 4, stream);
    return {uint64_t{last[0]} + last[1], last[1] != 0};
  }
};

}  // namespace

size_t quant_encode(const QuantParams& p, ConstTensorView in, uint8_t* out, uint64_t seed,
                    cudaStream_t stream) {
  const Geometry g(in.count, p.block, p.bits);
  if (g.blocks == 0) return 0;
  const float max_code = static_cast<float>((1u << p.bits) - 1);
  Scratch s(g, /*with_quants=*/true, p.rotate);
  const unsigned grid = grid_for(g.blocks, kWarpsPerBlock);
  if (p.rotate) {
    rotate_kernel<<<grid, kThreads, 0, stream>>>(g, in.data, in.dtype, s.rotated, s.too_large);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }
  const Source src{in.data, in.dtype, s.rotated};
  scan_kernel<<<grid, kThreads, 0, stream>>>(g, src, s.too_large, max_code, s.quants, s.raw_flags);
  HYCC_CUDA_CHECK(cudaGetLastError());
  s.scan(g.blocks, stream);
  pick_encode(p.bits, p.stochastic)<<<grid, kThreads, 0, stream>>>(g, src, s.quants, s.ordinals,
                                                                   quant::noise_key(seed), out);
  HYCC_CUDA_CHECK(cudaGetLastError());
  const auto [raw_blocks, last_is_raw] = s.raw_count(g.blocks, stream);
  return g.raw_at + g.raw_elements(raw_blocks, last_is_raw) * dtype_size(in.dtype);
}

void quant_decode(const QuantParams& p, const uint8_t* payload, size_t payload_bytes,
                  TensorView out, cudaStream_t stream) {
  const Geometry g(out.count, p.block, p.bits);
  const auto corrupt = [](const std::string& what) {
    throw CorruptStream(tagged("codec:quant", "device decode: ", what));
  };
  if (payload_bytes < g.raw_at) {
    corrupt(detail::concat("payload of ", payload_bytes, " bytes is shorter than the ", g.raw_at,
                           " bytes of block headers and codes"));
  }
  if (g.blocks == 0) {
    if (payload_bytes != 0)
      corrupt(detail::concat("payload of ", payload_bytes, " bytes for 0 values"));
    return;
  }
  const float max_code = static_cast<float>((1u << p.bits) - 1);
  Scratch s(g, /*with_quants=*/false, p.rotate);
  HYCC_CUDA_CHECK(cudaMemsetAsync(s.result, 0, 8, stream));
  check_kernel<<<grid_for(g.blocks, kThreads), kThreads, 0, stream>>>(g, payload, max_code,
                                                                      s.raw_flags, s.result);
  HYCC_CUDA_CHECK(cudaGetLastError());
  s.scan(g.blocks, stream);
  const auto [raw_blocks, last_is_raw] = s.raw_count(g.blocks, stream);
  const uint64_t raw = g.raw_elements(raw_blocks, last_is_raw);
  uint32_t error = 0;
  copy_to_host(&error, s.result, 4, stream);
  if (error != 0) corrupt("a block header has an invalid min or scale");
  if (payload_bytes != g.raw_at + raw * dtype_size(out.dtype)) {
    corrupt(detail::concat("payload of ", payload_bytes, " bytes, expected ",
                           g.raw_at + raw * dtype_size(out.dtype)));
  }
  pick_decode(p.bits)<<<grid_for(g.blocks, kWarpsPerBlock), kThreads, 0, stream>>>(
      g, payload, s.ordinals, out.data, out.dtype, s.rotated, s.result);
  HYCC_CUDA_CHECK(cudaGetLastError());
  copy_to_host(&error, s.result, 4, stream);
  if (error != 0) corrupt("a raw block has a wrong ordinal");
}

}  // namespace hycc::codec::cuda
