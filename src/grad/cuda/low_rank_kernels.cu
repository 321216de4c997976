// The products of PowerSGD on the device. Each kernel performs the float32 operations of its host
// function (grad/low_rank.cc) in the same order, without FMA contraction (--fmad=false), so a
// device step of PowerSGD has the host's bits:
// - multiply_mq: a warp per row of P; its lanes form 4 groups of 8, group g takes the outputs
//   k = g, g + 4, ..., lane t of a group the host's partial sum t (terms j = t mod 8, in order),
//   and the group adds its partials in the host's tree (exchanges with lanes t ^ 1, t ^ 2, t ^ 4).
// - multiply_mtp: a thread per (block of kMtpRowBlock rows, k, j) sums its block's terms, then a
//   thread per (k, j) adds the block sums in order: r x cols x rows / 64 threads at work.
// - multiply_pqt: a thread per output, the r terms in order.
#include "codec/cuda/device_util.cuh"
#include "grad/cuda/low_rank_kernels.h"
#include "grad/low_rank.h"

namespace hycc::grad::cuda {
namespace {

using codec::cuda::grid_for;
using codec::cuda::kThreads;
using codec::cuda::kWarp;

constexpr unsigned kGroup = 8;  // multiply_mq's partial sums
constexpr unsigned kGroups = kWarp / kGroup;

__global__ void mq_kernel(const float* m, uint64_t rows, uint64_t cols, const float* qt, uint64_t r,
                          float* p) {
  const uint64_t i = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp;
  if (i >= rows) return;
  const unsigned lane = threadIdx.x % kWarp, t = lane % kGroup, group = lane / kGroup;
  const unsigned mask = 0xffu << (kGroup * group);
  const float* row = m + i * cols;
  for (uint64_t k = group; k < r; k += kGroups) {
    const float* q = qt + k * cols;
    float s = 0.0f;
    for (uint64_t j = t; j < cols; j += kGroup) s = s + row[j] * q[j];
    s = s + __shfl_xor_sync(mask, s, 1);  // lane t: s_t + s_(t^1)
    s = s + __shfl_xor_sync(mask, s, 2);  // lane 0: (s0 + s1) + (s2 + s3)
    s = s + __shfl_xor_sync(mask, s, 4);  // lane 0: ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + ...)
    if (t == 0) p[i * r + k] = s;
  }
}

// partial[b][k][j] = the terms of rows [b * kMtpRowBlock, ...) summed in order from 0.
__global__ void mtp_block_kernel(const float* m, uint64_t rows, uint64_t cols, const float* p,
                                 uint64_t r, uint64_t outputs, uint64_t blocks, float* partial) {
  const uint64_t x = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (x >= blocks * outputs) return;
  const uint64_t b = x / outputs, k = x % outputs / cols, j = x % cols;
  const uint64_t begin = b * grad::kMtpRowBlock;
  const uint64_t end = begin + grad::kMtpRowBlock < rows ? begin + grad::kMtpRowBlock : rows;
  float s = 0.0f;
  for (uint64_t i = begin; i < end; ++i) s = s + p[i * r + k] * m[i * cols + j];
  partial[x] = s;
}

// qt[x] = the block sums of output x added in order to 0.
__global__ void mtp_sum_kernel(const float* partial, uint64_t outputs, uint64_t blocks, float* qt) {
  const uint64_t x = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (x >= outputs) return;
  float s = 0.0f;
  for (uint64_t b = 0; b < blocks; ++b) s = s + partial[b * outputs + x];
  qt[x] = s;
}

__global__ void pqt_kernel(const float* p, const float* qt, uint64_t rows, uint64_t cols,
                           uint64_t r, float* out) {
  const uint64_t x = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (x >= rows * cols) return;
  const uint64_t i = x / cols, j = x % cols;
  float s = 0.0f;
  for (uint64_t k = 0; k < r; ++k) s = s + p[i * r + k] * qt[k * cols + j];
  out[x] = s;
}

uint64_t row_blocks(size_t rows) { return (rows + grad::kMtpRowBlock - 1) / grad::kMtpRowBlock; }

}  // namespace

void multiply_mq(const float* m, size_t rows, size_t cols, const float* qt, size_t r, float* p,
                 cudaStream_t stream) {
  if (rows == 0 || r == 0) return;
  mq_kernel<<<grid_for(uint64_t{rows} * kWarp, kThreads), kThreads, 0, stream>>>(m, rows, cols, qt,
                                                                                 r, p);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

size_t multiply_mtp_scratch(size_t rows, size_t cols, size_t r) {
  return row_blocks(rows) * r * cols;
}

void multiply_mtp(const float* m, size_t rows, size_t cols, const float* p, size_t r, float* qt,
                  float* scratch, cudaStream_t stream) {
  const uint64_t outputs = uint64_t{r} * cols, blocks = row_blocks(rows);
  if (outputs == 0) return;
  if (blocks > 0) {
    mtp_block_kernel<<<grid_for(blocks * outputs, kThreads), kThreads, 0, stream>>>(
        m, rows, cols, p, r, outputs, blocks, scratch);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }
  mtp_sum_kernel<<<grid_for(outputs, kThreads), kThreads, 0, stream>>>(scratch, outputs, blocks,
                                                                       qt);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

void multiply_pqt(const float* p, const float* qt, size_t rows, size_t cols, size_t r, float* out,
                  cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  pqt_kernel<<<grid_for(uint64_t{rows} * cols, kThreads), kThreads, 0, stream>>>(p, qt, rows, cols,
                                                                                 r, out);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hycc::grad::cuda
