// The host emulation of DeviceOps: device memory is host memory, copies are memcpy, and the
// codecs are the CPU codecs' encode/decode (the payload part of their streams), with the host
// collectives' own float32 helpers (add_f32, store_result) and PowerSGD's products, so that the
// emulated device collectives compute exactly what the host rings compute.
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "codec/float_io.h"
#include "coll/coll_internal.h"
#include "coll/device/device_ops.h"
#include "coll/device/payload_checksum.h"
#include "common/finite.h"
#include "grad/low_rank.h"
#include "grad/method.h"
#include "grad/sign_codec.h"
#include "grad/topk_select.h"
#include "hycc/codec_device.h"

namespace hycc::coll::device {
namespace {

void free_host(void* data, size_t) { ::operator delete (data, std::align_val_t{64}); }

Memory host_memory(size_t bytes) {
  // Never empty: a zero-byte payload still has an address, as cudaMalloc'd scratch does.
  const size_t n = bytes == 0 ? 64 : bytes;
  return Memory(::operator new (n, std::align_val_t{64}), n, free_host);
}

class HostEmulatedOps final : public DeviceOps {
 public:
  const char* name() const override { return "host emulation"; }
  bool is_device_memory(const void*) const override { return true; }

  Memory allocate(size_t bytes) override { return host_memory(bytes); }
  Memory allocate_pinned(size_t bytes) override { return host_memory(bytes); }

  void copy_to_host(void* host, const void* device, size_t bytes) override {
    if (bytes != 0) std::memcpy(host, device, bytes);
  }
  void copy_to_device(void* device, const void* host, size_t bytes) override {
    if (bytes != 0) std::memcpy(device, host, bytes);
  }
  void copy_device(void* dst, const void* src, size_t bytes) override {
    if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
  }
  void zero(void* device, size_t bytes) override {
    if (bytes != 0) std::memset(device, 0, bytes);
  }
  void synchronize() override {}

  size_t encode(const CodecConfig& config, ConstTensorView in, void* out, size_t capacity,
                uint64_t seed) override {
    return config.codec().encode(in, {static_cast<std::byte*>(out), capacity},
                                 CompressOptions{seed});
  }

  void decode(const CodecConfig& config, const void* payload, size_t bytes,
              TensorView out) override {
    config.codec().decode({static_cast<const std::byte*>(payload), bytes}, out);
  }

  void decode_accumulate(const CodecConfig& config, const void* payload, size_t bytes, DType wire,
                         ConstTensorView own, float* partial) override {
    const size_t n = own.count;
    try {
      if (wire == DType::kF32) {
        decode(config, payload, bytes, {DType::kF32, n, partial});
      } else {
        narrow_.resize(n);
        decode(config, payload, bytes, {wire, n, narrow_.data()});
        codec::load_as_float({wire, n, narrow_.data()}, 0, n, partial);
      }
    } catch (const Error&) {
      std::memset(partial, 0, n * sizeof(float));
      add_f32(partial, own, 0, n);
      throw;
    }
    add_f32(partial, own, 0, n);
  }

  void round_into(const float* partial, ReduceOp op, int size, TensorView out) override {
    store_result(partial, out.count, op, size, out, 0);
  }

  void subtract(const float* a, const float* b, float* out, size_t n) override {
    for (size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
  }

  void add(const float* a, const float* b, float* out, size_t n) override {
    for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }

  bool zero_nonfinite(float* data, size_t n) override { return hycc::zero_nonfinite({data, n}); }

  uint64_t checksum(const void* data, size_t bytes) override {
    return payload_checksum(data, bytes);
  }

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
  std::vector<uint16_t> narrow_;
  std::vector<float> decoded_;
};

}  // namespace

std::unique_ptr<DeviceOps> make_host_emulated_ops() { return std::make_unique<HostEmulatedOps>(); }

}  // namespace hycc::coll::device
