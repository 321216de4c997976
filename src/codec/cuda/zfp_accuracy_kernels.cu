// zfp fixed-accuracy on the device: the stages of codec/block/zfp_accuracy_stages.h, one thread
// per block of 4 values (the CPU replay in tests/unit/zfp_accuracy_stages_test.cc loops over the
// same functions). Encoding: every block into a 192-bit slot, exclusive scan of the bit sizes,
// the stream's words zeroed up to its end, every block ORed in at its offset (atomics: blocks
// share words), the stream copied out. Decoding: the parallel walk (parallel_walk.cu) gives
// every block's bit offset and the stream's length, then every block decodes at its offset.
#include <cub/device/device_scan.cuh>

#include "codec/block/zfp_accuracy_stages.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/cuda/parallel_walk.h"

namespace hycc::codec::cuda {
namespace {

using zfp::AccuracyChain;
using zfp::AccuracyInput;
using zfp::WideBlockBits;

__global__ void encode_kernel(AccuracyInput g, WideBlockBits* slots, uint64_t* sizes,
                              unsigned long long* non_finite) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b >= g.blocks()) return;
  const uint32_t bad = zfp::accuracy_encode_stage(g, b, slots, sizes);
  if (bad != 0) atomicAdd(non_finite, static_cast<unsigned long long>(bad));
}

// Zeroes the stream's words up to its end (offsets and sizes of the last block, on the device).
__global__ void zero_kernel(const uint64_t* offsets, const uint64_t* sizes, uint64_t blocks,
                            unsigned long long* words, uint64_t max_words) {
  const uint64_t i = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  const uint64_t bits = offsets[blocks - 1] + sizes[blocks - 1];
  if (i < max_words && i < (bits + 63) / 64) words[i] = 0;
}

__global__ void compact_kernel(const WideBlockBits* slots, const uint64_t* offsets,
                               const uint64_t* sizes, uint64_t blocks, unsigned long long* words) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b >= blocks) return;
  zfp::accuracy_compact_stage(slots, offsets, sizes, b, [words](uint64_t w, uint64_t v) {
    atomicOr(&words[w], static_cast<unsigned long long>(v));
  });
}

__global__ void decode_kernel(AccuracyChain c, const uint64_t* offsets, void* out, DType dtype,
                              uint64_t count) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b < c.blocks) zfp::accuracy_decode_stage(c, offsets, b, out, dtype, count);
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

ZfpAccuracyEncoded zfp_accuracy_encode(int minexp, ConstTensorView in, uint8_t* out,
                                       cudaStream_t stream) {
  ZfpAccuracyEncoded r;
  if (in.count == 0) return r;
  const AccuracyInput g{in.data, in.dtype, in.count, minexp};
  const uint64_t blocks = g.blocks();
  const uint64_t max_words = (blocks * zfp::kMaxAccuracyBlockBits + 63) / 64;
  const auto n = static_cast<int64_t>(blocks);
  size_t cub_bytes = 0;
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, cub_bytes, static_cast<uint64_t*>(nullptr),
                                                static_cast<uint64_t*>(nullptr), n));
  const size_t slot_area = aligned(blocks * sizeof(WideBlockBits));
  const size_t word_area = aligned(max_words * 8);
  auto* base = static_cast<uint8_t*>(
      scratch(slot_area + word_area + 2 * aligned(blocks * 8) + 256 + aligned(cub_bytes), stream));
  auto* slots = reinterpret_cast<WideBlockBits*>(base);
  auto* words = reinterpret_cast<unsigned long long*>(base + slot_area);
  auto* sizes = reinterpret_cast<uint64_t*>(base + slot_area + word_area);
  auto* offsets = sizes + aligned(blocks * 8) / 8;
  auto* non_finite =
      reinterpret_cast<unsigned long long*>(base + slot_area + word_area + 2 * aligned(blocks * 8));
  void* cub_temp = base + slot_area + word_area + 2 * aligned(blocks * 8) + 256;

  HYCC_CUDA_CHECK(cudaMemsetAsync(non_finite, 0, 8, stream));
  const unsigned grid = grid_for(blocks, kThreads);
  encode_kernel<<<grid, kThreads, 0, stream>>>(g, slots, sizes, non_finite);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp, cub_bytes, sizes, offsets, n, stream));
  const unsigned word_grid = grid_for(max_words, kThreads);
  zero_kernel<<<word_grid, kThreads, 0, stream>>>(offsets, sizes, blocks, words, max_words);
  HYCC_CUDA_CHECK(cudaGetLastError());
  compact_kernel<<<grid, kThreads, 0, stream>>>(slots, offsets, sizes, blocks, words);
  HYCC_CUDA_CHECK(cudaGetLastError());
  uint64_t last[2];
  copy_to_host(&last[0], offsets + blocks - 1, 8, stream);
  copy_to_host(&last[1], sizes + blocks - 1, 8, stream);
  copy_to_host(&r.non_finite, non_finite, 8, stream);
  if (r.non_finite != 0) return r;
  r.bytes = (last[0] + last[1] + 7) / 8;
  HYCC_CUDA_CHECK(cudaMemcpyAsync(out, words, r.bytes, cudaMemcpyDeviceToDevice, stream));
  return r;
}

bool zfp_accuracy_decode(int minexp, const uint8_t* payload, size_t payload_bytes, TensorView out,
                         cudaStream_t stream) {
  if (out.count == 0) return payload_bytes == 0;
  const AccuracyChain chain{payload, payload_bytes,
                            (out.count + zfp::kBlockValues - 1) / zfp::kBlockValues, minexp};
  const size_t walk_bytes = parallel_walk_scratch_bytes(chain);
  auto* base = static_cast<uint8_t*>(scratch(aligned(chain.blocks * 8) + 256 + walk_bytes, stream));
  auto* offsets = reinterpret_cast<uint64_t*>(base);
  auto* result = reinterpret_cast<zfp::AccuracyWalk*>(base + aligned(chain.blocks * 8));
  void* walk_temp = base + aligned(chain.blocks * 8) + 256;
  parallel_walk(chain, walk_temp, offsets, result, stream);
  zfp::AccuracyWalk walk;
  copy_to_host(&walk, result, sizeof(walk), stream);
  if (walk.past_end || (walk.end + 7) / 8 != payload_bytes) return false;
  decode_kernel<<<grid_for(chain.blocks, kThreads), kThreads, 0, stream>>>(chain, offsets, out.data,
                                                                           out.dtype, out.count);
  HYCC_CUDA_CHECK(cudaGetLastError());
  return true;
}

}  // namespace hycc::codec::cuda
