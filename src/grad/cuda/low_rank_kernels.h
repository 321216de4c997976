// The products of PowerSGD on the device (low_rank_kernels.cu), queued on a stream. Float32,
// row-major, the shapes and the operation order of grad/low_rank.h, so that their results are
// the host functions' bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace hycc::grad::cuda {

// p (rows x r) = m (rows x cols) times qt (r x cols) transposed: multiply_mq.
void multiply_mq(const float* m, size_t rows, size_t cols, const float* qt, size_t r, float* p,
                 cudaStream_t stream);
// Floats of scratch multiply_mtp needs.
size_t multiply_mtp_scratch(size_t rows, size_t cols, size_t r);
// qt (r x cols) = (m^T p)^T: multiply_mtp; `scratch` holds multiply_mtp_scratch() floats.
void multiply_mtp(const float* m, size_t rows, size_t cols, const float* p, size_t r, float* qt,
                  float* scratch, cudaStream_t stream);
// out (rows x cols) = p qt: multiply_pqt.
void multiply_pqt(const float* p, const float* qt, size_t rows, size_t cols, size_t r, float* out,
                  cudaStream_t stream);

}  // namespace hycc::grad::cuda
