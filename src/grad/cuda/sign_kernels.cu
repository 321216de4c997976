// The sign compressor's chunk coding on the device, with grad/sign_block.h's functions and order:
// - the scales: a CUDA block of kLanes threads per tile of every chunk (thread t: lane t's sum,
//   then the pairwise tree in shared memory), then a thread per chunk adding its tile sums in
//   order; the bits: a warp per word (a ballot);
// - decoding and the server's sum: a thread per element.
// Chunks are chunk_range's balanced split: the first n % chunks hold one element more, so the
// chunk of a tile or an element follows from two counts (sign::chunk_of).
#include "codec/cuda/device_util.cuh"
#include "grad/cuda/sign_kernels.h"
#include "grad/sign_block.h"

namespace hycc::grad::cuda {
namespace {

using codec::cuda::grid_for;
using codec::cuda::kThreads;
using codec::cuda::kWarp;
namespace sign = grad::sign;

// Where the chunks and their tiles are: chunk j holds count(j) elements from offset(j), and its
// tiles are numbered from first_tile(j).
struct Chunks {
  uint64_t n, chunks, base, rem, tiles_big, tiles_small;

  Chunks(uint64_t total, uint64_t parts)
      : n(total),
        chunks(parts),
        base(total / parts),
        rem(total % parts),
        tiles_big(sign::tiles(total / parts + 1)),
        tiles_small(sign::tiles(total / parts)) {}
  __host__ __device__ uint64_t count(uint64_t j) const { return base + (j < rem ? 1 : 0); }
  __host__ __device__ uint64_t offset(uint64_t j) const { return j * base + (j < rem ? j : rem); }
  __host__ __device__ uint64_t first_tile(uint64_t j) const {
    return j < rem ? j * tiles_big : rem * tiles_big + (j - rem) * tiles_small;
  }
  __host__ __device__ uint64_t total_tiles() const { return first_tile(chunks); }
};

static_assert(sign::kLanes == kThreads, "a CUDA block of the tile kernel is one tile's lanes");

__global__ void tile_kernel(const float* x, Chunks c, double* tile_sums) {
  __shared__ double lanes[sign::kLanes];
  const uint64_t b = blockIdx.x;
  const uint64_t big = c.rem * c.tiles_big;
  const uint64_t j = b < big ? b / c.tiles_big : c.rem + (b - big) / c.tiles_small;
  const uint64_t tile = b - c.first_tile(j);
  const unsigned t = threadIdx.x;
  lanes[t] = sign::lane_sum(x + c.offset(j), c.count(j), tile, t);
  __syncthreads();
  for (unsigned s = sign::kLanes / 2; s > 0; s /= 2) {
    if (t < s) lanes[t] = lanes[t] + lanes[t + s];
    __syncthreads();
  }
  if (t == 0) tile_sums[b] = lanes[0];
}

__global__ void scale_kernel(const double* tile_sums, Chunks c, uint64_t block, uint32_t* words) {
  const uint64_t j = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (j >= c.chunks) return;
  double sum = 0;
  for (uint64_t t = c.first_tile(j); t < c.first_tile(j + 1); ++t) sum += tile_sums[t];
  words[j * block] = codec::f32_to_bits(sign::scale_of(sum, c.count(j)));
}

// Words 1 .. block - 1 of every chunk: its bits, then zeros. A warp per word, lane b reading
// value 32 w + b (coalesced): the word is the warp's ballot of x >= 0 (sign::sign_word).
__global__ void bits_kernel(const float* x, Chunks c, uint64_t block, uint32_t* words) {
  const uint64_t k = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp;
  const unsigned lane = threadIdx.x % kWarp;
  if (k >= c.chunks * (block - 1)) return;  // the same for the whole warp
  const uint64_t j = k / (block - 1), w = k % (block - 1);
  const uint64_t i = 32 * w + lane;
  const bool bit = i < c.count(j) && x[c.offset(j) + i] >= 0;
  const uint32_t word = __ballot_sync(0xffffffffu, bit);
  if (lane == 0) words[j * block + 1 + w] = word;
}

__global__ void decode_kernel(const uint32_t* words, uint64_t block, uint64_t chunks, uint64_t n,
                              float* out) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const sign::ChunkOf at = sign::chunk_of(i, n, chunks);
  const uint32_t* w = words + at.chunk * block;
  out[i] = sign::sign_value(w[1 + at.offset / 32], static_cast<unsigned>(at.offset % 32), w[0]);
}

__global__ void server_sum_kernel(const uint32_t* words, uint64_t block, uint64_t chunks,
                                  uint64_t count, bool average, const float* aux, float* sum) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const auto value = [&](uint64_t j) {
    const uint32_t* w = words + j * block;
    return sign::sign_value(w[1 + i / 32], static_cast<unsigned>(i % 32), w[0]);
  };
  float s = value(0);
  for (uint64_t j = 1; j < chunks; ++j) s = s + value(j);
  if (average) s = s / static_cast<float>(chunks);
  if (aux != nullptr) s = s + aux[i];
  sum[i] = s;
}

}  // namespace

size_t sign_encode_scratch(size_t n, int chunks) {
  return Chunks(n, static_cast<uint64_t>(chunks)).total_tiles();
}

void sign_encode(const float* x, size_t n, int chunks, size_t block, uint32_t* words,
                 double* scratch, cudaStream_t stream) {
  const Chunks c(n, static_cast<uint64_t>(chunks));
  if (c.total_tiles() > 0) {
    const auto tiles = static_cast<unsigned>(c.total_tiles());  // one CUDA block each
    tile_kernel<<<tiles, sign::kLanes, 0, stream>>>(x, c, scratch);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }
  scale_kernel<<<grid_for(c.chunks, kThreads), kThreads, 0, stream>>>(scratch, c, block, words);
  HYCC_CUDA_CHECK(cudaGetLastError());
  if (block > 1) {
    const uint64_t lanes = c.chunks * (block - 1) * kWarp;  // a warp per word
    bits_kernel<<<grid_for(lanes, kThreads), kThreads, 0, stream>>>(x, c, block, words);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }
}

void sign_decode(const uint32_t* words, size_t block, int chunks, size_t n, float* out,
                 cudaStream_t stream) {
  if (n == 0) return;
  decode_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(
      words, block, static_cast<uint64_t>(chunks), n, out);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

void sign_server_sum(const uint32_t* words, size_t block, int chunks, size_t count, ReduceOp op,
                     const float* aux, float* sum, cudaStream_t stream) {
  if (count == 0) return;
  server_sum_kernel<<<grid_for(count, kThreads), kThreads, 0, stream>>>(
      words, block, static_cast<uint64_t>(chunks), count, op == ReduceOp::kAverage, aux, sum);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hycc::grad::cuda
