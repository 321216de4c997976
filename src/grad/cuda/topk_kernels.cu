// The top-k compressor's payload on the device, choosing what grad::select_topk chooses:
// 1. radix select of the k-th largest key (the float's bits without the sign): four passes over
//    the elements, 8 bits each from the top, a 256-bin histogram of the keys that share the
//    digits chosen so far (per CUDA block in shared memory, then added up); the host walks the
//    bins from the top to find the digit holding the k-th key. The result: the threshold key T
//    and how many of the keys equal to T are needed (the rest of k after the keys above T).
// 2. the chosen elements: keys above T, and the keys equal to T whose rank among them (an
//    exclusive scan in index order) is below the need: ties go to the lower index;
// 3. an exclusive scan of the choice gives every chosen element its place in ascending index
//    order; values, indices and the residual are written, then the indices packed (a thread per
//    32-bit word of the bit stream, least significant bit first, as pack_indices).
// Decoding: a thread per (value, index) pair, payload after payload (float32 adds in payload
// order; the indices of one payload are distinct); an index >= n raises a flag.
#include <cub/device/device_scan.cuh>

#include "codec/cuda/device_util.cuh"
#include "grad/cuda/topk_kernels.h"

namespace hycc::grad::cuda {
namespace {

using codec::cuda::copy_to_host;
using codec::cuda::grid_for;
using codec::cuda::kThreads;

constexpr unsigned kBins = 256;

__device__ inline uint32_t key_of(float v) { return codec::f32_to_bits(v) & 0x7fffffffu; }

// hist[d] += the keys with (key & mask) == prefix whose digit at `shift` is d.
__global__ void histogram_kernel(const float* x, uint64_t n, uint32_t prefix, uint32_t mask,
                                 unsigned shift, uint32_t* hist) {
  __shared__ uint32_t local[kBins];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t key = key_of(x[i]);
    if ((key & mask) == prefix) atomicAdd(&local[(key >> shift) & 0xffu], 1u);
  }
  __syncthreads();
  if (local[threadIdx.x] != 0) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}

__global__ void equal_kernel(const float* x, uint64_t n, uint32_t threshold, uint32_t* flags) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = key_of(x[i]) == threshold ? 1u : 0u;
}

// flags[i] = chosen(i), from the ranks of the keys equal to the threshold.
__global__ void choose_kernel(const float* x, uint64_t n, uint32_t threshold, uint32_t need,
                              const uint32_t* equal_rank, uint32_t* flags) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t key = key_of(x[i]);
  flags[i] = key > threshold || (key == threshold && equal_rank[i] < need) ? 1u : 0u;
}

__global__ void write_kernel(const float* x, uint64_t n, const uint32_t* chosen,
                             const uint32_t* place, uint32_t* values, uint64_t* indices,
                             float* residual) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (chosen[i] != 0) {
    values[place[i]] = codec::f32_to_bits(x[i]);
    indices[place[i]] = i;
  }
  if (residual != nullptr) residual[i] = chosen[i] != 0 ? 0.0f : x[i];
}

// Word w of the packed indices: the bits [32 w, 32 w + 32) of the stream in which index t
// occupies bits [t bits, (t + 1) bits).
__global__ void pack_kernel(const uint64_t* indices, uint64_t k, unsigned bits, uint64_t words,
                            uint32_t* out) {
  const uint64_t w = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (w >= words) return;
  const uint64_t low = 32 * w;
  const uint64_t last = (low + 31) / bits < k - 1 ? (low + 31) / bits : k - 1;
  uint32_t word = 0;
  for (uint64_t t = low / bits; t <= last; ++t) {
    const uint64_t start = t * bits;
    if (start >= low) {
      word |= static_cast<uint32_t>(indices[t] << (start - low));
    } else if (low - start < 64) {
      word |= static_cast<uint32_t>(indices[t] >> (low - start));
    }
  }
  out[w] = word;
}

// Index t of a packed stream.
__device__ inline uint64_t unpack(const uint32_t* packed, uint64_t t, unsigned bits) {
  const uint64_t start = t * bits;
  const unsigned offset = static_cast<unsigned>(start % 32);
  uint64_t w = start / 32;
  uint64_t v = uint64_t{packed[w]} >> offset;
  for (unsigned got = 32 - offset; got < bits; got += 32) v |= uint64_t{packed[++w]} << got;
  return bits == 64 ? v : v & ((uint64_t{1} << bits) - 1);
}

__global__ void accumulate_kernel(const uint32_t* payload, uint64_t k, unsigned bits, uint64_t n,
                                  float* out, uint32_t* bad) {
  const uint64_t t = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (t >= k) return;
  const uint64_t i = unpack(payload + k, t, bits);
  if (i >= n) {
    atomicOr(bad, 1u);
    return;
  }
  out[i] = out[i] + codec::bits_to_f32(payload[t]);
}

constexpr size_t align256(size_t v) { return (v + 255) / 256 * 256; }

size_t cub_bytes(size_t n) {
  size_t bytes = 0;
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<uint32_t*>(nullptr),
                                                static_cast<uint32_t*>(nullptr),
                                                static_cast<int64_t>(n)));
  return bytes;
}

}  // namespace

size_t topk_encode_scratch(size_t n, size_t k) {
  return align256(kBins * 4) + 3 * align256(n * 4) + align256(k * 8) + align256(cub_bytes(n));
}

void topk_encode(const float* x, size_t n, size_t k, int bits, uint32_t* words, float* residual,
                 void* scratch, cudaStream_t stream) {
  auto* base = static_cast<uint8_t*>(scratch);
  auto* hist = reinterpret_cast<uint32_t*>(base);
  auto* flags = reinterpret_cast<uint32_t*>(base + align256(kBins * 4));
  auto* ranks = reinterpret_cast<uint32_t*>(base + align256(kBins * 4) + align256(n * 4));
  auto* places = reinterpret_cast<uint32_t*>(base + align256(kBins * 4) + 2 * align256(n * 4));
  auto* indices = reinterpret_cast<uint64_t*>(base + align256(kBins * 4) + 3 * align256(n * 4));
  void* cub_temp = base + align256(kBins * 4) + 3 * align256(n * 4) + align256(k * 8);
  size_t cub_temp_bytes = cub_bytes(n);

  // 1. The threshold key, 8 bits at a time from the top.
  const unsigned grid = grid_for(n, kThreads) < 1024 ? grid_for(n, kThreads) : 1024;
  uint32_t prefix = 0, mask = 0;
  uint64_t left = k;  // of the k, how many are still to be found among the keys with the prefix
  for (int shift = 24; shift >= 0; shift -= 8) {
    HYCC_CUDA_CHECK(cudaMemsetAsync(hist, 0, kBins * 4, stream));
    histogram_kernel<<<grid, kBins, 0, stream>>>(x, n, prefix, mask, static_cast<unsigned>(shift),
                                                 hist);
    HYCC_CUDA_CHECK(cudaGetLastError());
    uint32_t h[kBins];
    copy_to_host(h, hist, sizeof h, stream);
    unsigned digit = 0;
    uint64_t above = 0;
    for (unsigned d = kBins; d-- > 0;) {
      if (above + h[d] >= left) {
        digit = d;
        break;
      }
      above += h[d];
    }
    left -= above;
    prefix |= digit << shift;
    mask |= 0xffu << shift;
  }

  // 2. The choice; 3. places in index order, then the payload.
  const unsigned elements = grid_for(n, kThreads);
  equal_kernel<<<elements, kThreads, 0, stream>>>(x, n, prefix, flags);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp, cub_temp_bytes, flags, ranks,
                                                static_cast<int64_t>(n), stream));
  choose_kernel<<<elements, kThreads, 0, stream>>>(x, n, prefix, static_cast<uint32_t>(left), ranks,
                                                   flags);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp, cub_temp_bytes, flags, places,
                                                static_cast<int64_t>(n), stream));
  write_kernel<<<elements, kThreads, 0, stream>>>(x, n, flags, places, words, indices, residual);
  HYCC_CUDA_CHECK(cudaGetLastError());
  const uint64_t packed = (uint64_t{k} * static_cast<unsigned>(bits) + 31) / 32;
  pack_kernel<<<grid_for(packed, kThreads), kThreads, 0, stream>>>(
      indices, k, static_cast<unsigned>(bits), packed, words + k);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

int topk_accumulate(const uint32_t* words, size_t stride, int payloads, size_t k, int bits,
                    size_t n, float* out, uint32_t* flag, cudaStream_t stream) {
  for (int j = 0; j < payloads; ++j) {
    HYCC_CUDA_CHECK(cudaMemsetAsync(flag, 0, 4, stream));
    accumulate_kernel<<<grid_for(k, kThreads), kThreads, 0, stream>>>(
        words + static_cast<size_t>(j) * stride, k, static_cast<unsigned>(bits), n, out, flag);
    HYCC_CUDA_CHECK(cudaGetLastError());
    uint32_t bad = 0;
    copy_to_host(&bad, flag, 4, stream);
    if (bad != 0) return j;
  }
  return -1;
}

}  // namespace hycc::grad::cuda
