// The parallel walk (codec/block/chain_walk.h) as five launches: per chunk its next table in
// shared memory and its maps; per super-chunk and entry the composed maps; one thread placing
// the super-chunks; per super-chunk the placing of its chunks; per chunk reached its offsets.
// No host synchronization between them.
#include "codec/block/eb_stages.h"
#include "codec/block/mpc_stages.h"
#include "codec/block/zfp_accuracy_stages.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/parallel_walk.h"

namespace hycc::codec::cuda {
namespace {

using chain::Geometry;
using chain::Map;
using chain::Start;

// The next table of a chunk lives in shared memory: 2 * Chain::kChunk bytes per block.
static_assert(chain::Geometry::valid(eb::EbChain::kChunk, eb::max_block_bytes(4)));
static_assert(chain::Geometry::valid(mpc::MpcChain<uint32_t>::kChunk,
                                     mpc::slot_bytes<uint32_t>() / sizeof(uint32_t)));
static_assert(chain::Geometry::valid(zfp::AccuracyChain::kChunk, zfp::kMaxAccuracyBlockBits));
static_assert(chain::Geometry::valid(mpc::MpcChain<uint16_t>::kChunk,
                                     mpc::slot_bytes<uint16_t>() / sizeof(uint16_t)));

template <class Chain>
__device__ void fill_next(const Chain& chain, const Geometry& g, uint64_t c, uint16_t* next) {
  for (uint32_t p = threadIdx.x; p < g.chunk; p += kThreads) {
    next[p] = chain::next_stage(chain, g, c, p);
  }
  __syncthreads();
}

template <class Chain>
__global__ void map_kernel(Chain chain, Geometry g, Map* maps) {
  __shared__ uint16_t next[Chain::kChunk];
  const uint64_t c = blockIdx.x;
  fill_next(chain, g, c, next);
  for (uint32_t e = threadIdx.x; e < g.entries; e += kThreads) {
    maps[c * g.entries + e] = chain::follow_stage(next, g, e);
  }
}

__global__ void compose_kernel(const Map* maps, Geometry g, Map* super_maps) {
  const uint64_t i = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i >= g.supers * g.entries) return;
  super_maps[i] =
      chain::compose_stage(maps, g, i / g.entries, static_cast<uint32_t>(i % g.entries));
}

__global__ void place_kernel(const Map* super_maps, Geometry g, Start* super_starts) {
  if (blockIdx.x == 0 && threadIdx.x == 0) chain::place_stage(super_maps, g, super_starts);
}

__global__ void place_chunks_kernel(const Map* maps, Geometry g, const Start* super_starts,
                                    Start* starts) {
  const uint64_t s = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (s < g.supers) chain::place_chunks_stage(maps, g, s, super_starts, starts);
}

template <class Chain>
__global__ void rewalk_kernel(Chain chain, Geometry g, const Start* starts, uint64_t* offsets,
                              typename Chain::Result* result) {
  __shared__ uint16_t next[Chain::kChunk];
  const uint64_t c = blockIdx.x;
  if (starts[c].reach == chain::Reach::kUnreached) return;  // the whole block
  fill_next(chain, g, c, next);
  if (threadIdx.x == 0) chain::rewalk_stage(chain, next, g, c, starts, offsets, result);
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

template <class Chain>
size_t parallel_walk_scratch_bytes(const Chain& chain) {
  const Geometry g = chain_geometry(chain);
  return aligned(g.chunks * g.entries * sizeof(Map)) + aligned(g.supers * g.entries * sizeof(Map)) +
         aligned(g.supers * sizeof(Start)) + aligned(g.chunks * sizeof(Start));
}

template <class Chain>
void parallel_walk(const Chain& chain, void* scratch, uint64_t* offsets,
                   typename Chain::Result* result, cudaStream_t stream) {
  const Geometry g = chain_geometry(chain);
  auto* at = static_cast<uint8_t*>(scratch);
  auto* maps = reinterpret_cast<Map*>(at);
  at += aligned(g.chunks * g.entries * sizeof(Map));
  auto* super_maps = reinterpret_cast<Map*>(at);
  at += aligned(g.supers * g.entries * sizeof(Map));
  auto* super_starts = reinterpret_cast<Start*>(at);
  at += aligned(g.supers * sizeof(Start));
  auto* starts = reinterpret_cast<Start*>(at);

  const auto chunks = static_cast<unsigned>(g.chunks);
  map_kernel<Chain><<<chunks, kThreads, 0, stream>>>(chain, g, maps);
  HYCC_CUDA_CHECK(cudaGetLastError());
  const unsigned compose_grid = grid_for(g.supers * g.entries, kThreads);
  compose_kernel<<<compose_grid, kThreads, 0, stream>>>(maps, g, super_maps);
  HYCC_CUDA_CHECK(cudaGetLastError());
  place_kernel<<<1, 1, 0, stream>>>(super_maps, g, super_starts);
  HYCC_CUDA_CHECK(cudaGetLastError());
  const unsigned supers_grid = grid_for(g.supers, kThreads);
  place_chunks_kernel<<<supers_grid, kThreads, 0, stream>>>(maps, g, super_starts, starts);
  HYCC_CUDA_CHECK(cudaGetLastError());
  rewalk_kernel<Chain><<<chunks, kThreads, 0, stream>>>(chain, g, starts, offsets, result);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

#define HYCC_PARALLEL_WALK(Chain)                                   \
  template size_t parallel_walk_scratch_bytes<Chain>(const Chain&); \
  template void parallel_walk<Chain>(const Chain&, void*, uint64_t*, Chain::Result*, cudaStream_t);
HYCC_PARALLEL_WALK(eb::EbChain)
HYCC_PARALLEL_WALK(mpc::MpcChain<uint16_t>)
HYCC_PARALLEL_WALK(mpc::MpcChain<uint32_t>)
HYCC_PARALLEL_WALK(zfp::AccuracyChain)
#undef HYCC_PARALLEL_WALK

}  // namespace hycc::codec::cuda
