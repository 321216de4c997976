// The host emulation of DeviceOps: device memory is host memory, copies are memcpy, and the
// codecs are the CPU codecs' encode/decode (the payload part of their streams), with the host
// collectives' own float32 helpers (add_f32, store_result) and PowerSGD's products, so that the
// emulated device collectives compute exactly what the host rings compute.
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "codec/float_io.h"
#include "common/finite.h"
#include "device/device_ops.h"
#include "device/payload_checksum.h"
#include "hycc/codec_device.h"

namespace hycc::device {
namespace {

// Freed host blocks of this thread, kept for the next payloads: up to kRetainedBytes in all,
// each handed out again for a request of at least half its size. Collectives allocate their
// payload buffers per call; page-faulting fresh multi-megabyte blocks in every call cost up to
// 40% of a 64 MiB allreduce on the emulated cluster (docs/results.md).
class HostBlockCache {
 public:
  static constexpr size_t kRetainedBytes = size_t{64} << 20;

  static HostBlockCache* of_this_thread() {
    if (gone_) return nullptr;
    thread_local HostBlockCache cache;
    return &cache;
  }
  ~HostBlockCache() {
    gone_ = true;  // blocks freed later on this thread (by other thread-locals) go to the heap
    for (const Block& b : free_) release(b.data);
  }
  void* take(size_t bytes, size_t& got) {
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      const size_t n = free_[i].bytes;
      if (n >= bytes && n / 2 <= bytes && (best == free_.size() || n < free_[best].bytes)) best = i;
    }
    if (best == free_.size()) return nullptr;
    void* data = free_[best].data;
    got = free_[best].bytes;
    retained_ -= got;
    free_[best] = free_.back();
    free_.pop_back();
    return data;
  }
  bool keep(void* data, size_t bytes) {
    if (retained_ + bytes > kRetainedBytes) return false;
    free_.push_back({data, bytes});
    retained_ += bytes;
    return true;
  }
  static void release(void* data) { ::operator delete (data, std::align_val_t{64}); }

 private:
  struct Block {
    void* data;
    size_t bytes;
  };
  static thread_local bool gone_;
  std::vector<Block> free_;
  size_t retained_ = 0;
};

thread_local bool HostBlockCache::gone_ = false;

void free_host(void* data, size_t bytes, void*) {
  HostBlockCache* cache = HostBlockCache::of_this_thread();
  if (cache == nullptr || !cache->keep(data, bytes)) HostBlockCache::release(data);
}

Memory host_memory(size_t bytes) {
  // Never empty: a zero-byte payload still has an address, as cudaMalloc'd scratch does.
  const size_t n = bytes == 0 ? 64 : bytes;
  if (HostBlockCache* cache = HostBlockCache::of_this_thread()) {
    size_t got = 0;
    if (void* data = cache->take(n, got)) return Memory(data, got, free_host);
  }
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
      codec::add_f32(partial, own, 0, n);
      throw;
    }
    codec::add_f32(partial, own, 0, n);
  }

  void round_into(const float* partial, ReduceOp op, int size, TensorView out) override {
    codec::store_result(partial, out.count, op, size, out, 0);
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

  void write_checksum(const void* data, size_t bytes, void* trailer) override {
    const uint64_t sum = payload_checksum(data, bytes);
    unsigned char le[8];
    for (int b = 0; b < 8; ++b) le[b] = static_cast<unsigned char>(sum >> (8 * b));
    std::memcpy(trailer, le, 8);
  }

  void verify_checksum(const void* data, size_t bytes, const void* trailer, uint32_t* failed,
                       uint32_t ordinal) override {
    const auto* t = static_cast<const unsigned char*>(trailer);
    uint64_t stored = 0;
    for (int b = 0; b < 8; ++b) stored |= static_cast<uint64_t>(t[b]) << (8 * b);
    if (payload_checksum(data, bytes) != stored && *failed == 0) *failed = ordinal + 1;
  }

  void signal(uint32_t* word, uint32_t value) override {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
  }

 private:
  std::vector<uint16_t> narrow_;
};

}  // namespace

std::unique_ptr<DeviceOps> make_host_emulated_ops() { return std::make_unique<HostEmulatedOps>(); }

DeviceOps& host_ops() {
  thread_local HostEmulatedOps ops;
  return ops;
}

std::unique_ptr<DeviceOps> make_ops(const DeviceAlgorithmOptions& options) {
  if (options.backend == DeviceBackend::kHostEmulation) return make_host_emulated_ops();
  return make_cuda_ops(options.stream);
}

}  // namespace hycc::device
