// The parallel walk of codec/block/chain_walk.h on the device: where every record of an "eb" or
// "mpc" payload starts (src/codec/cuda/parallel_walk.cu), for eb_kernels.cu and mpc_kernels.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "codec/block/chain_walk.h"

namespace hycc::codec::cuda {

template <class Chain>
chain::Geometry chain_geometry(const Chain& chain) {
  return chain::Geometry::of(chain.units(), chain.records(), Chain::kChunk, chain.longest());
}

// Device scratch the walk of `chain` needs (256-byte aligned pieces).
template <class Chain>
size_t parallel_walk_scratch_bytes(const Chain& chain);

// Writes offsets[r] of every record the walk reaches and *result (device memory), as the
// chain's reference walk does; ordered on `stream`, does not wait. chain.records() >= 1.
template <class Chain>
void parallel_walk(const Chain& chain, void* scratch, uint64_t* offsets,
                   typename Chain::Result* result, cudaStream_t stream);

}  // namespace hycc::codec::cuda
