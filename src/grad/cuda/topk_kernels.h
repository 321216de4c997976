// The top-k compressor's payload on the device (topk_kernels.cu): DeviceOps::topk_encode and
// topk_accumulate (device/device_ops.h) with the results of grad/topk_select.h.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace hycc::grad::cuda {

// Device scratch of topk_encode for n elements and k chosen, in bytes.
size_t topk_encode_scratch(size_t n, size_t k);
void topk_encode(const float* x, size_t n, size_t k, int bits, uint32_t* words, float* residual,
                 void* scratch, cudaStream_t stream);
// `flag` is one word of device scratch.
int topk_accumulate(const uint32_t* words, size_t stride, int payloads, size_t k, int bits,
                    size_t n, float* out, uint32_t* flag, cudaStream_t stream);

}  // namespace hycc::grad::cuda
