// The sign compressor's chunk coding on the device (sign_kernels.cu), queued on a stream: the
// DeviceOps::sign_* operations (device/device_ops.h) with the bits of grad/sign_codec.h.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "hycc/collectives.h"

namespace hycc::grad::cuda {

// Doubles of scratch sign_encode needs.
size_t sign_encode_scratch(size_t n, int chunks);
void sign_encode(const float* x, size_t n, int chunks, size_t block, uint32_t* words,
                 double* scratch, cudaStream_t stream);
void sign_decode(const uint32_t* words, size_t block, int chunks, size_t n, float* out,
                 cudaStream_t stream);
void sign_server_sum(const uint32_t* words, size_t block, int chunks, size_t count, ReduceOp op,
                     const float* aux, float* sum, cudaStream_t stream);

}  // namespace hycc::grad::cuda
