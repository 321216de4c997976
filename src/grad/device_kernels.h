// The gradient compressors' own kernels on device memory: PowerSGD's products, the sign
// compressor's chunk coding and top-k's payloads, ordered on the stream of the device operations
// they were made for. Two implementations, as for device/device_ops.h: CUDA
// (cuda/cuda_grad_kernels.cu) and the host emulation (host_grad_kernels.cc); both give the bits
// of the CPU methods' functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "device/device_ops.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"

namespace hycc::grad {

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;

  // The products of PowerSGD on float32 device memory, with the bits of grad/low_rank.h's
  // functions of the same names: p (rows x r) = m qt^T, qt (r x cols) = (m^T p)^T,
  // out (rows x cols) = p qt.
  virtual void multiply_mq(const float* m, size_t rows, size_t cols, const float* qt, size_t r,
                           float* p) = 0;
  virtual void multiply_mtp(const float* m, size_t rows, size_t cols, const float* p, size_t r,
                            float* qt) = 0;
  virtual void multiply_pqt(const float* p, const float* qt, size_t rows, size_t cols, size_t r,
                            float* out) = 0;

  // The sign compressor's chunk coding (grad/sign_block.h, the bits of grad/sign_codec.h) on
  // device memory. sign_encode: x[0, n) cut into `chunks` chunks (chunk_range), chunk j encoded
  // into words [j block, (j + 1) block), block >= sign::chunk_words(chunk 0's count), the words
  // past its bits 0. sign_decode: out[0, n) = +-scale of each element's chunk.
  virtual void sign_encode(const float* x, size_t n, int chunks, size_t block, uint32_t* words) = 0;
  virtual void sign_decode(const uint32_t* words, size_t block, int chunks, size_t n,
                           float* out) = 0;
  // sum[i] (i < count) = the decoded element i of the `chunks` encoded chunks of `count` values
  // at words [j block, ...), added in order in float32, divided by `chunks` for an average, plus
  // aux[i] unless aux is null (the sign method's server step).
  virtual void sign_server_sum(const uint32_t* words, size_t block, int chunks, size_t count,
                               ReduceOp op, const float* aux, float* sum) = 0;

  // The top-k compressor's payload (grad/method_topk.cc) of x[0, n), n < 2^32: the k elements
  // select_topk chooses (largest |x| by the bit pattern without the sign, ties to the lower
  // index), in ascending index order: words[0, k) their values' bits, then their indices packed
  // at `bits` bits (pack_indices). Unless residual is null: residual[i] = 0 for the chosen i and
  // x[i] for the others.
  virtual void topk_encode(const float* x, size_t n, size_t k, int bits, uint32_t* words,
                           float* residual) = 0;
  // out[index] += value (float32) for the k (value, index) pairs of each of the `payloads`
  // payloads at words [j stride, ...), payload by payload in order. Returns the first payload
  // with an index >= n (its pairs are not all added), or -1; waits for the answer.
  virtual int topk_accumulate(const uint32_t* words, size_t stride, int payloads, size_t k,
                              int bits, size_t n, float* out) = 0;
};

// The kernels that go with the device operations `ops` made for `options` (device::make_ops):
// the host emulation's, or CUDA's on options.stream with scratch memory from `ops`.
std::unique_ptr<DeviceKernels> make_device_kernels(const DeviceCollectiveOptions& options,
                                                   device::DeviceOps& ops);
// CUDA (cuda/cuda_grad_kernels.cu); Unavailable in a build without CUDA.
std::unique_ptr<DeviceKernels> make_cuda_kernels(device::DeviceOps& ops, DeviceStream stream);

}  // namespace hycc::grad
