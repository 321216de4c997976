// The gradient kernels on CUDA (low_rank_kernels.cu, sign_kernels.cu, topk_kernels.cu) on the
// stream of the device operations they go with, their scratch memory from those operations.
#include <cuda_runtime.h>

#include "codec/cuda/device_util.cuh"
#include "grad/cuda/low_rank_kernels.h"
#include "grad/cuda/sign_kernels.h"
#include "grad/cuda/topk_kernels.h"
#include "grad/device_kernels.h"
#include "hycc/device.h"

namespace hycc::grad {
namespace {

using device::Memory;

class CudaKernels final : public DeviceKernels {
 public:
  CudaKernels(device::DeviceOps& ops, DeviceStream stream)
      : ops_(ops), stream_(static_cast<cudaStream_t>(stream)) {}

  void multiply_mq(const float* m, size_t rows, size_t cols, const float* qt, size_t r,
                   float* p) override {
    cuda::multiply_mq(m, rows, cols, qt, r, p, stream_);
  }
  void multiply_mtp(const float* m, size_t rows, size_t cols, const float* p, size_t r,
                    float* qt) override {
    grow(low_rank_, cuda::multiply_mtp_scratch(rows, cols, r) * sizeof(float));
    cuda::multiply_mtp(m, rows, cols, p, r, qt, static_cast<float*>(low_rank_.data()), stream_);
  }
  void multiply_pqt(const float* p, const float* qt, size_t rows, size_t cols, size_t r,
                    float* out) override {
    cuda::multiply_pqt(p, qt, rows, cols, r, out, stream_);
  }

  void sign_encode(const float* x, size_t n, int chunks, size_t block, uint32_t* words) override {
    grow(sign_, cuda::sign_encode_scratch(n, chunks) * sizeof(double));
    cuda::sign_encode(x, n, chunks, block, words, static_cast<double*>(sign_.data()), stream_);
  }
  void sign_decode(const uint32_t* words, size_t block, int chunks, size_t n, float* out) override {
    cuda::sign_decode(words, block, chunks, n, out, stream_);
  }
  void sign_server_sum(const uint32_t* words, size_t block, int chunks, size_t count, ReduceOp op,
                       const float* aux, float* sum) override {
    cuda::sign_server_sum(words, block, chunks, count, op, aux, sum, stream_);
  }

  void topk_encode(const float* x, size_t n, size_t k, int bits, uint32_t* words,
                   float* residual) override {
    grow(topk_, cuda::topk_encode_scratch(n, k));
    cuda::topk_encode(x, n, k, bits, words, residual, topk_.data(), stream_);
  }
  int topk_accumulate(const uint32_t* words, size_t stride, int payloads, size_t k, int bits,
                      size_t n, float* out) override {
    grow(flag_, 4);
    return cuda::topk_accumulate(words, stride, payloads, k, bits, n, out,
                                 static_cast<uint32_t*>(flag_.data()), stream_);
  }

 private:
  // Replaces `scratch` with a block of at least `bytes` if it is smaller (after the work queued
  // before, which may still use it).
  void grow(Memory& scratch, size_t bytes) {
    if (scratch.bytes() >= bytes) return;
    ops_.synchronize();
    scratch = ops_.allocate(bytes);
  }

  device::DeviceOps& ops_;
  cudaStream_t stream_;
  Memory low_rank_;  // multiply_mtp's block sums
  Memory sign_;      // sign_encode's tile sums
  Memory topk_;      // topk_encode's histogram, flags, scans and indices
  Memory flag_;      // topk_accumulate's index check
};

}  // namespace

std::unique_ptr<DeviceKernels> make_cuda_kernels(device::DeviceOps& ops, DeviceStream stream) {
  return std::make_unique<CudaKernels>(ops, stream);
}

}  // namespace hycc::grad
