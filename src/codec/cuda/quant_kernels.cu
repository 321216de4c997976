// "quant" on the device (format at the top of src/codec/codec_quant.cc). One warp per block of
// the codec: the lanes scan the block's order keys and reduce them, then lane j takes words
// j, j + 32, ... of the segment layout. The per-value and per-word arithmetic is that of
// codec/block/quant_block.h, the functions the CPU codec runs.
//
// The payload's size depends only on (count, block, bits) (special blocks are in-band), so
// encoding never waits for the device.
// Encoding: (1) scan: min/scale per block, or for a special block the finite range and the
// non-finite kinds of its input values and their coding; (2) headers and codes.
// Decoding: (1) check every header, (2) decode; the host reads the check's flag once.
// rotate=hadamard: before (1), one warp per full block rotates it into a float scratch tensor
// (codec/block/hadamard.h, a stage at a time, the lanes taking its butterflies) and flags blocks
// too large to rotate, which (1) makes special; (1) and (2) read the rotated values of regular
// blocks, the input's of special ones. Decoding dequantizes a rotated block into the scratch and
// rotates it back there.

#include <type_traits>

#include "codec/block/hadamard.h"
#include "codec/block/quant_block.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"

namespace hycc::codec::cuda {
namespace {

using quant::BlockQuant;
using quant::round_up8;

constexpr int kWarpsPerBlock = kThreads / kWarp;

using Geometry = quant::PayloadLayout;

struct DeviceQuant {
  BlockQuant regular;
  quant::SpecialQuant special;
  uint32_t is_special;
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

// The warp's union of its lanes' special scans (every lane gets it).
__device__ quant::SpecialScan warp_merge(quant::SpecialScan s) {
  for (int d = kWarp / 2; d > 0; d /= 2) {
    quant::SpecialScan other;
    other.finite.lo = __shfl_xor_sync(0xffffffffu, s.finite.lo, d);
    other.finite.hi = __shfl_xor_sync(0xffffffffu, s.finite.hi, d);
    other.seen = __shfl_xor_sync(0xffffffffu, s.seen, d);
    s.merge(other);
  }
  return s;
}

__global__ void scan_kernel(Geometry g, Source src, const uint32_t* too_large, uint32_t max_code,
                            DeviceQuant* quants) {
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
  // Every lane holds the block's range, so the choice below is the same on every lane.
  const BlockQuant q = quant::quant_from_keys(keys, static_cast<float>(max_code));
  const bool special = q.special || (src.rotates(g, b) && too_large[b] != 0);
  DeviceQuant dq{q, {}, special ? 1u : 0u};
  if (special) {
    quant::SpecialScan scan;
    for (uint64_t i = lane; i < n; i += kWarp) {
      scan.add(load_float(src.in, src.dtype, b * g.block + i));
    }
    dq.special = quant::choose_special(warp_merge(scan), max_code);
  }
  if (lane == 0) quants[b] = dq;
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
                              uint64_t noise_key, uint8_t* out) {
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks) return;
  const uint64_t begin = b * g.block, n = g.elements(b), n8 = round_up8(n);
  uint8_t* header = out + g.header_offset(b);
  uint8_t* codes = out + g.codes_offset(b);
  const DeviceQuant& dq = quants[b];
  const auto noise = [noise_key, begin](size_t i) {
    return quant::stochastic_noise(noise_key, begin + i);
  };
  if (dq.is_special != 0) {
    const quant::SpecialQuant sq = dq.special;
    if (lane == 0) {
      store_u32(header, f32_to_bits(sq.min));
      store_u32(header + 4, sq.scale_bits);
    }
    const quant::SegmentLayout layout(kBits, n8);
    const auto code_of = [&](size_t i) -> uint32_t {
      if (i >= n) return 0;
      const float x = load_float(source.in, source.dtype, begin + i);
      return quant::special_code<kStochastic>(x, sq, kStochastic ? noise(i) : 0.0f);
    };
    for (size_t j = lane; j < layout.len; j += kWarp) layout.put_word(j, code_of, codes);
    return;
  }
  const BlockQuant q = dq.regular;
  if (lane == 0) {
    store_u32(header, f32_to_bits(q.min));
    store_u32(header + 4, f32_to_bits(q.scale));
  }
  const BlockValues x{source, g, b, n, q.min};
  const size_t len = n8 / quant::Packing<kBits>::kPer;
  for (size_t j = lane; j < len; j += kWarp) {
    quant::quantize_word<kBits, kStochastic>(x, len, j, q, noise, codes);
  }
}

// Checks every block's header (as QuantCodec::decode does); *error becomes 1 where one is
// malformed (device memory, or pinned host memory for a deferred check: no atomics there).
__global__ void check_kernel(Geometry g, const uint8_t* payload, uint32_t max_code,
                             uint32_t* error) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b >= g.blocks) return;
  const uint8_t* header = payload + g.header_offset(b);
  if (!quant::header_valid(load_u32(header), load_u32(header + 4), max_code)) {
    *static_cast<volatile uint32_t*>(error) = 1u;  // every writer writes 1
  }
}

template <int kBits>
__global__ void decode_kernel(Geometry g, const uint8_t* payload, void* out, DType dtype,
                              float* rotated) {
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks) return;
  const uint64_t begin = b * g.block, n = g.elements(b), n8 = round_up8(n);
  const uint8_t* header = payload + g.header_offset(b);
  const uint32_t min_bits = load_u32(header), scale_bits = load_u32(header + 4);
  const uint8_t* codes = payload + g.codes_offset(b);
  if ((scale_bits & quant::kSpecialBit) != 0) {
    quant::SpecialHeader h;
    quant::read_special(min_bits, scale_bits, (1u << kBits) - 1, h);  // checked by check_kernel
    const quant::SegmentLayout layout(kBits, n8);
    for (uint64_t i = lane; i < n; i += kWarp) {
      store_float(quant::special_value(layout.code(codes, i), h), out, dtype, begin + i);
    }
    return;
  }
  const float lo = bits_to_f32(min_bits), scale = bits_to_f32(scale_bits);
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

// The ring's middle hop in one pass (quant_hop): one warp per block of a payload of the same
// geometry in and out. Lane l decodes words l, l + 32, ... of the incoming block (regular or
// special), rounds each value into the wire dtype and widens it, adds its element of `own`, and
// keeps the sums in registers: the same elements it then codes, since word j holds elements
// r * len + j in and out. The warp reduces the sums' key range, chooses the block's coding (or
// a special block's, from the warp's special scan of the sums) and writes header and codes:
// decode_accumulate then quant_encode of the sums, in one read of the payload and `own` and one
// write of the payload. Blocks of up to kHopMaxBlock values (kHopValues sums per lane).
constexpr uint64_t kHopMaxBlock = 256;
constexpr int kHopValues = 16;  // >= ceil(len / 32) * per for every n8 <= 256

__device__ inline float through_wire(float v, DType wire) {
  if (wire == DType::kBF16) return bf16_to_f32(f32_to_bf16(v));
  if (wire == DType::kF16) return f16_to_f32(f32_to_f16(v));
  return v;
}

template <int kBits, bool kStochastic>
__global__ void hop_kernel(Geometry g, const uint8_t* payload, DType wire, const void* own,
                           DType own_dtype, uint64_t noise_key, uint8_t* out) {
  using P = quant::Packing<kBits>;
  const uint64_t b = (uint64_t{blockIdx.x} * kThreads + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (b >= g.blocks) return;
  const uint64_t begin = b * g.block, n = g.elements(b), n8 = round_up8(n);
  const size_t len = n8 / P::kPer;
  const uint32_t max_code = (1u << kBits) - 1;

  // Decode and add.
  const uint8_t* in_header = payload + g.header_offset(b);
  const uint32_t min_bits = load_u32(in_header), scale_bits = load_u32(in_header + 4);
  const bool in_special = (scale_bits & quant::kSpecialBit) != 0;
  quant::SpecialHeader in_h;
  if (in_special) quant::read_special(min_bits, scale_bits, max_code, in_h);  // checked before
  const float in_lo = bits_to_f32(min_bits), in_scale = bits_to_f32(scale_bits);
  const uint8_t* in_codes = payload + g.codes_offset(b);
  float sums[kHopValues];
  quant::KeyRange keys;
  for (size_t j = lane, w = 0; j < len; j += kWarp, ++w) {
    uint64_t word = 0;
    for (int m = 0; m < P::kBytes; ++m) {
      word |= static_cast<uint64_t>(in_codes[static_cast<size_t>(m) * len + j]) << (8 * m);
    }
    for (int r = 0; r < P::kPer; ++r) {
      const uint64_t i = static_cast<uint64_t>(r) * len + j;
      const auto code = static_cast<uint32_t>(word >> (r * kBits)) & P::kMask;
      const float decoded = in_special ? quant::special_value(code, in_h)
                                       : in_lo + static_cast<float>(code) * in_scale;
      float sum = 0;
      if (i < n) {
        sum = through_wire(decoded, wire) + load_float(own, own_dtype, begin + i);
        keys.add(quant::order_key(sum));
      }
      sums[w * P::kPer + r] = sum;
    }
  }
  for (int d = kWarp / 2; d > 0; d /= 2) {
    const int32_t other_lo = __shfl_xor_sync(0xffffffffu, keys.lo, d);
    const int32_t other_hi = __shfl_xor_sync(0xffffffffu, keys.hi, d);
    keys.merge(other_lo, other_hi);
  }

  // Encode the sums (as encode_kernel does the input's values).
  uint8_t* header = out + g.header_offset(b);
  uint8_t* codes = out + g.codes_offset(b);
  const BlockQuant q = quant::quant_from_keys(keys, static_cast<float>(max_code));
  const auto noise = [noise_key, begin](uint64_t i) {
    return kStochastic ? quant::stochastic_noise(noise_key, begin + i) : 0.0f;
  };
  quant::SpecialQuant sq;
  if (q.special) {
    quant::SpecialScan scan;
    for (size_t j = lane, w = 0; j < len; j += kWarp, ++w) {
      for (int r = 0; r < P::kPer; ++r) {
        if (static_cast<uint64_t>(r) * len + j < n) scan.add(sums[w * P::kPer + r]);
      }
    }
    sq = quant::choose_special(warp_merge(scan), max_code);
  }
  if (lane == 0) {
    store_u32(header, f32_to_bits(q.special ? sq.min : q.min));
    store_u32(header + 4, q.special ? sq.scale_bits : f32_to_bits(q.scale));
  }
  for (size_t j = lane, w = 0; j < len; j += kWarp, ++w) {
    uint64_t word = 0;
    for (int r = 0; r < P::kPer; ++r) {
      const uint64_t i = static_cast<uint64_t>(r) * len + j;
      uint32_t code = 0;
      if (q.special) {
        if (i < n) code = quant::special_code<kStochastic>(sums[w * P::kPer + r], sq, noise(i));
      } else {
        const float x = i < n ? sums[w * P::kPer + r] : q.min;  // padding codes are 0
        code = quant::quantize_value<kBits, kStochastic>(x, q, noise(i));
      }
      word |= static_cast<uint64_t>(code) << (r * kBits);
    }
    for (int m = 0; m < P::kBytes; ++m) {
      codes[static_cast<size_t>(m) * len + j] = static_cast<uint8_t>(word >> (8 * m));
    }
  }
}

// make(std::integral_constant<int, B>{}) for the code width B = bits (1..8).
template <typename Make>
auto for_bits(int bits, Make make) {
  switch (bits) {
    case 1:
      return make(std::integral_constant<int, 1>{});
    case 2:
      return make(std::integral_constant<int, 2>{});
    case 3:
      return make(std::integral_constant<int, 3>{});
    case 4:
      return make(std::integral_constant<int, 4>{});
    case 5:
      return make(std::integral_constant<int, 5>{});
    case 6:
      return make(std::integral_constant<int, 6>{});
    case 7:
      return make(std::integral_constant<int, 7>{});
    default:
      return make(std::integral_constant<int, 8>{});
  }
}

using HopKernel = void (*)(Geometry, const uint8_t*, DType, const void*, DType, uint64_t, uint8_t*);
using EncodeKernel = void (*)(Geometry, Source, const DeviceQuant*, uint64_t, uint8_t*);
using DecodeKernel = void (*)(Geometry, const uint8_t*, void*, DType, float*);

HopKernel pick_hop(int bits, bool stochastic) {
  return for_bits(bits, [stochastic](auto width) -> HopKernel {
    constexpr int kBits = decltype(width)::value;
    return stochastic ? hop_kernel<kBits, true> : hop_kernel<kBits, false>;
  });
}

EncodeKernel pick_encode(int bits, bool stochastic) {
  return for_bits(bits, [stochastic](auto width) -> EncodeKernel {
    constexpr int kBits = decltype(width)::value;
    return stochastic ? encode_kernel<kBits, true> : encode_kernel<kBits, false>;
  });
}

DecodeKernel pick_decode(int bits) {
  return for_bits(bits,
                  [](auto width) -> DecodeKernel { return decode_kernel<decltype(width)::value>; });
}

// Scratch: per-block quantization (encoding only), the check's error word, and for
// rotate=hadamard the rotated values and the too-large flags, 256-byte aligned pieces of one
// allocation.
struct Scratch {
  DeviceQuant* quants = nullptr;
  uint32_t* error = nullptr;
  float* rotated = nullptr;  // blocks * block floats
  uint32_t* too_large = nullptr;

  Scratch(const Geometry& g, bool with_quants, bool rotate, cudaStream_t stream) {
    const uint64_t blocks = g.blocks;
    const auto align = [](size_t v) { return (v + 255) / 256 * 256; };
    const size_t quant_bytes = with_quants ? align(blocks * sizeof(DeviceQuant)) : 0;
    const size_t rotated_bytes = rotate ? align(blocks * g.block * 4) + align(blocks * 4) : 0;
    const size_t fixed = quant_bytes + 256;
    auto* base = static_cast<uint8_t*>(scratch(fixed + rotated_bytes, stream));
    quants = reinterpret_cast<DeviceQuant*>(base);
    error = reinterpret_cast<uint32_t*>(base + quant_bytes);
    if (rotate) {
      rotated = reinterpret_cast<float*>(base + fixed);
      too_large = reinterpret_cast<uint32_t*>(base + fixed + align(blocks * g.block * 4));
    }
  }
};

}  // namespace

size_t quant_encode(const QuantParams& p, ConstTensorView in, uint8_t* out, uint64_t seed,
                    cudaStream_t stream) {
  const Geometry g(in.count, p.block, p.bits);
  if (g.blocks == 0) return 0;
  const uint32_t max_code = (1u << p.bits) - 1;
  Scratch s(g, /*with_quants=*/true, p.rotate, stream);
  const unsigned grid = grid_for(g.blocks, kWarpsPerBlock);
  if (p.rotate) {
    rotate_kernel<<<grid, kThreads, 0, stream>>>(g, in.data, in.dtype, s.rotated, s.too_large);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }
  const Source src{in.data, in.dtype, s.rotated};
  scan_kernel<<<grid, kThreads, 0, stream>>>(g, src, s.too_large, max_code, s.quants);
  HYCC_CUDA_CHECK(cudaGetLastError());
  pick_encode(p.bits, p.stochastic)<<<grid, kThreads, 0, stream>>>(g, src, s.quants,
                                                                   quant::noise_key(seed), out);
  HYCC_CUDA_CHECK(cudaGetLastError());
  return g.bytes;  // known without waiting
}

void quant_decode(const QuantParams& p, const uint8_t* payload, size_t payload_bytes,
                  TensorView out, cudaStream_t stream, uint32_t* failed) {
  const Geometry g(out.count, p.block, p.bits);
  if (payload_bytes != g.bytes) {
    throw CorruptStream(tagged("codec:quant", "device decode: payload of ", payload_bytes,
                               " bytes, expected the ", g.bytes,
                               " bytes of block headers and codes"));
  }
  if (g.blocks == 0) return;
  Scratch s(g, /*with_quants=*/false, p.rotate, stream);
  if (failed == nullptr) HYCC_CUDA_CHECK(cudaMemsetAsync(s.error, 0, 4, stream));
  check_kernel<<<grid_for(g.blocks, kThreads), kThreads, 0, stream>>>(
      g, payload, (1u << p.bits) - 1, failed != nullptr ? failed : s.error);
  HYCC_CUDA_CHECK(cudaGetLastError());
  pick_decode(p.bits)<<<grid_for(g.blocks, kWarpsPerBlock), kThreads, 0, stream>>>(
      g, payload, out.data, out.dtype, s.rotated);
  HYCC_CUDA_CHECK(cudaGetLastError());
  if (failed != nullptr) return;  // the caller reads *failed once the stream has passed here
  uint32_t error = 0;
  copy_to_host(&error, s.error, 4, stream);
  if (error != 0) {
    throw CorruptStream(
        tagged("codec:quant", "device decode: a block header has an invalid min or scale"));
  }
}

bool quant_hop(const QuantParams& p, const uint8_t* payload, size_t payload_bytes, DType wire,
               ConstTensorView own, uint8_t* out, uint64_t seed, cudaStream_t stream,
               uint32_t* failed) {
  const Geometry g(own.count, p.block, p.bits);
  if (p.rotate || p.block > kHopMaxBlock || payload_bytes != g.bytes) return false;
  if (g.blocks == 0) return true;
  const uint32_t max_code = (1u << p.bits) - 1;
  if (failed != nullptr) {
    check_kernel<<<grid_for(g.blocks, kThreads), kThreads, 0, stream>>>(g, payload, max_code,
                                                                        failed);
  } else {
    Scratch s(g, /*with_quants=*/false, false, stream);
    HYCC_CUDA_CHECK(cudaMemsetAsync(s.error, 0, 4, stream));
    check_kernel<<<grid_for(g.blocks, kThreads), kThreads, 0, stream>>>(g, payload, max_code,
                                                                        s.error);
    HYCC_CUDA_CHECK(cudaGetLastError());
    uint32_t error = 0;
    copy_to_host(&error, s.error, 4, stream);
    if (error != 0) return false;  // the separate steps report it
  }
  HYCC_CUDA_CHECK(cudaGetLastError());
  pick_hop(p.bits, p.stochastic)<<<grid_for(g.blocks, kWarpsPerBlock), kThreads, 0, stream>>>(
      g, payload, wire, own.data, own.dtype, quant::noise_key(seed), out);
  HYCC_CUDA_CHECK(cudaGetLastError());
  return true;
}

}  // namespace hycc::codec::cuda
