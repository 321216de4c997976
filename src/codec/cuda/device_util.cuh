// Helpers of the CUDA codecs: error checks, element access by dtype, per-thread scratch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "codec/float_convert.h"
#include "hycc/dtype.h"
#include "hycc/error.h"

namespace hycc::codec::cuda {

// Throws Unavailable carrying file:line, the call and CUDA's error string.
inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) {
    throw Unavailable(tagged("cuda", file, ":", line, ": ", call, ": ", cudaGetErrorString(e)));
  }
}
#define HYCC_CUDA_CHECK(call) ::hycc::codec::cuda::check((call), #call, __FILE__, __LINE__)

inline constexpr int kThreads = 256;  // threads per CUDA block of every kernel here
inline constexpr int kWarp = 32;

inline unsigned grid_for(uint64_t items, uint64_t per_block) {
  const uint64_t g = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(g == 0 ? 1 : g);
}

// Element i of a tensor as float, exactly (codec/float_io.cc's load_as_float, per element).
__device__ inline float load_float(const void* p, DType dtype, uint64_t i) {
  if (dtype == DType::kF32) return static_cast<const float*>(p)[i];
  const uint16_t h = static_cast<const uint16_t*>(p)[i];
  return dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// Stores v into element i, rounding to nearest even (store_from_float, per element).
__device__ inline void store_float(float v, void* p, DType dtype, uint64_t i) {
  if (dtype == DType::kF32) {
    static_cast<float*>(p)[i] = v;
  } else {
    static_cast<uint16_t*>(p)[i] = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
  }
}

// A device buffer for the codec kernels' scratch, grown on demand (cudaMalloc) and reused across
// calls so that a codec call does not allocate: one per host thread and stream, since calls
// return before their kernels are done (a stream-ordered call's) and work on one stream runs in
// order, while another stream's could overlap it. A thread keeps the buffers of its 8 most
// recently used streams (freeing one waits for the device).
void* scratch(size_t bytes, cudaStream_t stream);

// Copies `bytes` from device to host on `stream` and waits.
void copy_to_host(void* host, const void* device, size_t bytes, cudaStream_t stream);

}  // namespace hycc::codec::cuda
