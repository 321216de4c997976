// zfp fixed-rate on the device, one thread per block of 4 values, the per-block coder of
// codec/block/zfp_block.h (the one the CPU codec runs). Encoding: the 32 blocks of a warp span
// exactly B 32-bit words (B = bits per block), so each warp assembles its span in shared memory
// (lane t's bits at bit t * B, ORed in) and writes it out with coalesced stores; no word is
// shared between warps. Decoding mirrors it: the warp loads its span into shared memory and
// each lane decodes its block from there.
#include "codec/block/zfp_block.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/zfp_fixed_rate.h"

namespace hycc::codec::cuda {
namespace {

using zfp::BlockBits;
using zfp::kBlockValues;
using zfp::kMaxBlockBits;

constexpr int kWarpsPerBlock = kThreads / kWarp;

__global__ void encode_kernel(const void* in, DType dtype, uint64_t count, bool vector_loads,
                              uint32_t block_bits, uint8_t* out, uint64_t out_bytes,
                              bool word_aligned, unsigned long long* non_finite) {
  __shared__ uint32_t spans[kWarpsPerBlock][kMaxBlockBits];
  const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  uint32_t* span = spans[warp];
  for (uint32_t w = lane; w < block_bits; w += kWarp) span[w] = 0;
  __syncwarp();

  const uint64_t block = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  const uint64_t blocks = (count + kBlockValues - 1) / kBlockValues;
  if (block < blocks) {
    const uint64_t begin = block * kBlockValues;
    const uint32_t n =
        count - begin < kBlockValues ? static_cast<uint32_t>(count - begin) : kBlockValues;
    float x[kBlockValues];
    unsigned bad = 0;
    if (dtype == DType::kF32 && n == kBlockValues && vector_loads) {
      const float4 v = static_cast<const float4*>(in)[block];
      x[0] = v.x;
      x[1] = v.y;
      x[2] = v.z;
      x[3] = v.w;
    } else {
      for (uint32_t i = 0; i < n; ++i) x[i] = load_float(in, dtype, begin + i);
    }
    for (uint32_t i = 0; i < n; ++i) {
      if ((f32_to_bits(x[i]) & 0x7f800000u) == 0x7f800000u) {
        x[i] = 0.0f;
        ++bad;
      }
    }
    if (bad != 0) atomicAdd(non_finite, static_cast<unsigned long long>(bad));
    if (n < kBlockValues) zfp::pad_partial_block(x, n);
    BlockBits bits;
    zfp::encode_block(x, block_bits, bits);
    zfp::or_into_span(bits, lane, block_bits,
                      [span](uint32_t w, uint32_t v) { atomicOr(&span[w], v); });
  }
  __syncwarp();

  const uint64_t span_at = (uint64_t{blockIdx.x} * kWarpsPerBlock + warp) * block_bits * 4;
  for (uint32_t w = lane; w < block_bits; w += kWarp) {
    const uint64_t at = span_at + 4 * uint64_t{w};
    if (at >= out_bytes) break;
    if (word_aligned && at + 4 <= out_bytes) {
      *reinterpret_cast<uint32_t*>(out + at) = span[w];
    } else {
      for (uint32_t i = 0; i < 4 && at + i < out_bytes; ++i) {
        out[at + i] = static_cast<uint8_t>(span[w] >> (8 * i));
      }
    }
  }
}

// The mirror of the encoder: the warp loads its span of block_bits words (coalesced, bounded by
// the payload) into shared memory, then each lane takes its block's bits from it.
__global__ void decode_kernel(const uint8_t* payload, uint64_t payload_bytes, uint32_t block_bits,
                              bool word_aligned, void* out, DType dtype, uint64_t count) {
  __shared__ uint32_t spans[kWarpsPerBlock][kMaxBlockBits];
  const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  uint32_t* span = spans[warp];
  const uint64_t span_at = (uint64_t{blockIdx.x} * kWarpsPerBlock + warp) * block_bits * 4;
  for (uint32_t w = lane; w < block_bits; w += kWarp) {
    const uint64_t at = span_at + 4 * uint64_t{w};
    if (word_aligned && at + 4 <= payload_bytes) {
      span[w] = *reinterpret_cast<const uint32_t*>(payload + at);
    } else {
      uint32_t v = 0;
      for (uint32_t i = 0; i < 4 && at + i < payload_bytes; ++i) {
        v |= uint32_t{payload[at + i]} << (8 * i);
      }
      span[w] = v;
    }
  }
  __syncwarp();
  const uint64_t block = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  const uint64_t blocks = (count + kBlockValues - 1) / kBlockValues;
  if (block >= blocks) return;
  // The span's words are little-endian bytes of the stream (CUDA devices are little-endian).
  const BlockBits bits =
      zfp::load_block(reinterpret_cast<const uint8_t*>(span), uint64_t{block_bits} * 4,
                      uint64_t{lane} * block_bits, block_bits);
  float x[kBlockValues];
  zfp::decode_block(bits, block_bits, x);
  const uint64_t begin = block * kBlockValues;
  for (uint32_t i = 0; i < kBlockValues && begin + i < count; ++i) {
    store_float(x[i], out, dtype, begin + i);
  }
}

}  // namespace

uint64_t zfp_encode(uint32_t block_bits, ConstTensorView in, uint8_t* out, cudaStream_t stream) {
  if (in.count == 0) return 0;
  const uint64_t blocks = (in.count + kBlockValues - 1) / kBlockValues;
  auto* non_finite = static_cast<unsigned long long*>(scratch(8, stream));
  HYCC_CUDA_CHECK(cudaMemsetAsync(non_finite, 0, 8, stream));
  const bool aligned = reinterpret_cast<uintptr_t>(out) % 4 == 0;
  const bool vector_loads = reinterpret_cast<uintptr_t>(in.data) % 16 == 0;
  encode_kernel<<<grid_for(blocks, kThreads), kThreads, 0, stream>>>(
      in.data, in.dtype, in.count, vector_loads, block_bits, out,
      zfp::fixed_rate_bytes(in.count, block_bits), aligned, non_finite);
  HYCC_CUDA_CHECK(cudaGetLastError());
  unsigned long long bad = 0;
  copy_to_host(&bad, non_finite, 8, stream);
  return bad;
}

void zfp_decode(uint32_t block_bits, const uint8_t* payload, size_t payload_bytes, TensorView out,
                cudaStream_t stream) {
  if (out.count == 0) return;
  const uint64_t blocks = (out.count + kBlockValues - 1) / kBlockValues;
  const bool aligned = reinterpret_cast<uintptr_t>(payload) % 4 == 0;
  decode_kernel<<<grid_for(blocks, kThreads), kThreads, 0, stream>>>(
      payload, payload_bytes, block_bits, aligned, out.data, out.dtype, out.count);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hycc::codec::cuda
