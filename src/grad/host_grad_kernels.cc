// The gradient kernels of the host emulation: the CPU methods' own functions on host memory.
#include <cstring>
#include <vector>

#include "grad/device_kernels.h"
#include "grad/low_rank.h"
#include "grad/method.h"
#include "grad/sign_codec.h"
#include "grad/topk_select.h"

namespace hycc::grad {
namespace {

class HostKernels final : public DeviceKernels {
 public:
  void multiply_mq(const float* m, size_t rows, size_t cols, const float* qt, size_t r,
                   float* p) override {
    grad::multiply_mq({m, rows * cols}, rows, cols, {qt, r * cols}, r, {p, rows * r});
  }
  void multiply_mtp(const float* m, size_t rows, size_t cols, const float* p, size_t r,
                    float* qt) override {
    grad::multiply_mtp({m, rows * cols}, rows, cols, {p, rows * r}, r, {qt, r * cols});
  }
  void multiply_pqt(const float* p, const float* qt, size_t rows, size_t cols, size_t r,
                    float* out) override {
    grad::multiply_pqt({p, rows * r}, {qt, r * cols}, rows, cols, r, {out, rows * cols});
  }

  void sign_encode(const float* x, size_t n, int chunks, size_t block, uint32_t* words) override {
    for (int j = 0; j < chunks; ++j) {
      const ChunkRange c = chunk_range(n, chunks, j);
      grad::encode_sign({x + c.offset, c.count}, {words + size_t(j) * block, block});
    }
  }
  void sign_decode(const uint32_t* words, size_t block, int chunks, size_t n, float* out) override {
    for (int j = 0; j < chunks; ++j) {
      const ChunkRange c = chunk_range(n, chunks, j);
      grad::decode_sign({words + size_t(j) * block, block}, {out + c.offset, c.count});
    }
  }
  // As grad/method_sign.cc's server: decoded chunks summed in order, finish_op, + aux.
  void sign_server_sum(const uint32_t* words, size_t block, int chunks, size_t count, ReduceOp op,
                       const float* aux, float* sum) override {
    decoded_.resize(count);
    for (int j = 0; j < chunks; ++j) {
      grad::decode_sign({words + size_t(j) * block, block}, decoded_);
      for (size_t i = 0; i < count; ++i) sum[i] = j == 0 ? decoded_[i] : sum[i] + decoded_[i];
    }
    grad::finish_op({sum, count}, op, chunks);
    if (aux != nullptr) {
      for (size_t i = 0; i < count; ++i) sum[i] += aux[i];
    }
  }

  void topk_encode(const float* x, size_t n, size_t k, int bits, uint32_t* words,
                   float* residual) override {
    const std::vector<uint64_t> idx = grad::select_topk({x, n}, k);
    for (size_t t = 0; t < k; ++t) std::memcpy(&words[t], &x[idx[t]], sizeof(float));
    grad::pack_indices(idx, bits, {words + k, grad::packed_words(k, bits)});
    if (residual == nullptr) return;
    std::memcpy(residual, x, n * sizeof(float));
    for (const uint64_t i : idx) residual[i] = 0.0f;
  }
  // As grad/method_topk.cc adds the payloads.
  int topk_accumulate(const uint32_t* words, size_t stride, int payloads, size_t k, int bits,
                      size_t n, float* out) override {
    std::vector<uint64_t> idx(k);
    for (int j = 0; j < payloads; ++j) {
      const uint32_t* payload = words + size_t(j) * stride;
      grad::unpack_indices({payload + k, grad::packed_words(k, bits)}, bits, idx);
      for (size_t t = 0; t < k; ++t) {
        if (idx[t] >= n) return j;
        float v = 0;
        std::memcpy(&v, &payload[t], sizeof v);
        out[idx[t]] += v;
      }
    }
    return -1;
  }

 private:
  std::vector<float> decoded_;
};

}  // namespace

std::unique_ptr<DeviceKernels> make_device_kernels(const DeviceCollectiveOptions& options,
                                                   device::DeviceOps& ops) {
  if (options.backend == DeviceBackend::kHostEmulation) return std::make_unique<HostKernels>();
  return make_cuda_kernels(ops, options.stream);
}

}  // namespace hycc::grad
