// DeviceOps with CUDA: the device codecs (codec_device.h), async copies on the caller's stream,
// and two small kernels for the float32 accumulation and the final rounding. They use the same
// element conversions as the CPU (codec/float_convert.h through load_float/store_float) and
// plain IEEE float32 addition and division (no FMA contraction: --fmad=false), so their output is
// the host emulation's bit for bit.
//
// Memory: device and pinned blocks are kept per host thread after use (up to kRetainedBytes
// each) and handed out again, so that a collective does not call cudaMalloc/cudaHostAlloc on
// every segment; a freed block is reused in stream order (FreeBlock), never waited for.
#include <cuda_runtime.h>

#include <algorithm>
#include <exception>
#include <map>
#include <vector>

#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/float_convert.h"
#include "common/host_syncs.h"
#include "device/device_ops.h"
#include "device/payload_checksum.h"
#include "hycc/codec_device.h"
#include "hycc/device.h"

namespace hycc::device {
namespace {

using codec::cuda::grid_for;
using codec::cuda::kThreads;
using codec::cuda::kWarp;
using codec::cuda::load_float;
using codec::cuda::store_float;

constexpr size_t kRetainedBytes = size_t{256} << 20;

// A freed block: `freed` was recorded on `stream` when it was freed, after every use the host had
// queued (on `stream`, or on a stream `stream` waits for). Work queued on `stream` may reuse a
// device block at once (stream order); other streams, and the host for a pinned block, once
// `freed` has passed. So a call may return while its work is queued and free its buffers: no
// later call on another stream writes them before that work is done.
struct FreeBlock {
  void* data;
  cudaStream_t stream;
  cudaEvent_t freed;
};

// Free blocks of one kind (device or pinned) of this thread, by size.
struct BlockCache {
  std::multimap<size_t, FreeBlock> free;
  std::vector<cudaEvent_t> spare_events;
  size_t retained = 0;
  bool pinned = false;

  ~BlockCache() {
    for (auto& [bytes, b] : free) {
      count_host_sync();
      pinned ? cudaFreeHost(b.data) : cudaFree(b.data);  // both wait for the device
      cudaEventDestroy(b.freed);
    }
    for (cudaEvent_t e : spare_events) cudaEventDestroy(e);
  }

  // An event recorded on `stream` now, or null if that failed (it runs in deleters: no throw).
  cudaEvent_t record(cudaStream_t stream) {
    cudaEvent_t e = nullptr;
    if (!spare_events.empty()) {
      e = spare_events.back();
      spare_events.pop_back();
    } else if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    if (cudaEventRecord(e, stream) != cudaSuccess) {  // a stream destroyed since
      cudaGetLastError();
      spare_events.push_back(e);
      return nullptr;
    }
    return e;
  }

  // Whether `b` may be handed to work on `stream` now.
  bool reusable(const FreeBlock& b, cudaStream_t stream) const {
    if (!pinned && b.stream == stream) return true;
    return cudaEventQuery(b.freed) == cudaSuccess;  // not ready: not an error
  }
};

BlockCache& cache(bool pinned) {
  thread_local BlockCache device_blocks{{}, {}, 0, false};
  thread_local BlockCache pinned_blocks{{}, {}, 0, true};
  return pinned ? pinned_blocks : device_blocks;
}

void give_back(bool pinned, void* p, size_t bytes, void* stream_context) {
  BlockCache& c = cache(pinned);
  const auto stream = static_cast<cudaStream_t>(stream_context);
  if (c.retained + bytes <= kRetainedBytes) {
    if (cudaEvent_t freed = c.record(stream)) {
      c.free.emplace(bytes, FreeBlock{p, stream, freed});
      c.retained += bytes;
      return;
    }
  }
  count_host_sync();
  if (pinned) {
    cudaFreeHost(p);  // waits for the device
  } else {
    cudaFree(p);
  }
}
void free_device_block(void* p, size_t bytes, void* stream) { give_back(false, p, bytes, stream); }
void free_pinned_block(void* p, size_t bytes, void* stream) { give_back(true, p, bytes, stream); }

// A block of at least `bytes` for work on `stream`: a free one that may be reused (at most twice
// as large), or a new one.
Memory take(bool pinned, size_t bytes, cudaStream_t stream) {
  bytes = std::max<size_t>(bytes, 256);
  BlockCache& c = cache(pinned);
  for (auto it = c.free.lower_bound(bytes); it != c.free.end() && it->first <= 2 * bytes; ++it) {
    if (!c.reusable(it->second, stream)) continue;
    Memory m(it->second.data, it->first, pinned ? free_pinned_block : free_device_block, stream);
    c.spare_events.push_back(it->second.freed);
    c.retained -= it->first;
    c.free.erase(it);
    return m;
  }
  void* p = nullptr;
  if (pinned) {
    HYCC_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  } else {
    HYCC_CUDA_CHECK(cudaMalloc(&p, bytes));
  }
  return Memory(p, bytes, pinned ? free_pinned_block : free_device_block, stream);
}

// partial[i] = decoded[i] + own[i] (decoded == nullptr: zeros), float32.
__global__ void accumulate_kernel(const void* decoded, DType wire, const void* own, DType dtype,
                                  uint64_t n, float* partial) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float d = decoded == nullptr ? 0.0f : load_float(decoded, wire, i);
  partial[i] = d + load_float(own, dtype, i);
}

// out[i] = partial[i] (/ size), rounded into out's dtype.
__global__ void round_kernel(const float* partial, bool average, float size, uint64_t n, void* out,
                             DType dtype) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  store_float(average ? partial[i] / size : partial[i], out, dtype, i);
}

// out[i] = a[i] - b[i], or a[i] + b[i] with `sum`.
__global__ void subtract_kernel(const float* a, const float* b, float* out, uint64_t n, bool sum) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = sum ? a[i] + b[i] : a[i] - b[i];
}

// Sets the values that are not finite to +0 and *found to 1 if there were any.
__global__ void zero_nonfinite_kernel(float* data, uint64_t n, uint32_t* found) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if ((codec::f32_to_bits(data[i]) & 0x7f800000u) == 0x7f800000u) {
    data[i] = 0.0f;
    *found = 1;
  }
}

// *sum += the checksum terms of the payload's words (payload_checksum.h); grid-stride, one atomic
// add per warp.
__global__ void checksum_kernel(const unsigned char* data, uint64_t bytes, uint64_t words,
                                bool aligned, unsigned long long* sum) {
  uint64_t h = 0;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words;
       i += uint64_t{gridDim.x} * blockDim.x) {
    uint64_t w = 0;
    if (aligned && 8 * i + 8 <= bytes) {
      w = reinterpret_cast<const uint64_t*>(data)[i];
    } else {
      w = payload_word(data, bytes, i);
    }
    h += checksum_term(w, i);
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    h += __shfl_down_sync(0xffffffffu, h, offset);
  if ((threadIdx.x & (kWarp - 1)) == 0) atomicAdd(sum, static_cast<unsigned long long>(h));
}

// The little-endian 8 bytes at p (any alignment).
__device__ uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

// The checksum of a payload of `bytes` bytes whose terms are summed in *terms: written into the
// trailer, or compared with it (a mismatch sets *failed to ordinal + 1 unless it is set).
__global__ void store_checksum_kernel(const unsigned long long* terms, uint64_t bytes,
                                      unsigned char* trailer) {
  const uint64_t h = splitmix64(bytes) + static_cast<uint64_t>(*terms);
  for (int b = 0; b < 8; ++b) trailer[b] = static_cast<unsigned char>(h >> (8 * b));
}
__global__ void check_checksum_kernel(const unsigned long long* terms, uint64_t bytes,
                                      const unsigned char* trailer, uint32_t* failed,
                                      uint32_t ordinal) {
  const uint64_t h = splitmix64(bytes) + static_cast<uint64_t>(*terms);
  if (h != load_le64(trailer)) atomicCAS(failed, 0u, ordinal + 1);
  __threadfence_system();
}
__global__ void signal_kernel(uint32_t* word, uint32_t value) {
  __threadfence_system();
  *static_cast<volatile uint32_t*>(word) = value;
}

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(DeviceStream stream) : stream_(stream) {}

  const char* name() const override { return "CUDA"; }

  bool is_device_memory(const void* p) const override {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }

  Memory allocate(size_t bytes) override { return take(false, bytes, stream_); }
  Memory allocate_pinned(size_t bytes) override { return take(true, bytes, stream_); }

  void copy_to_host(void* host, const void* device, size_t bytes) override {
    if (bytes == 0) return;
    HYCC_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
  }
  void copy_to_device(void* device, const void* host, size_t bytes) override {
    if (bytes == 0) return;
    HYCC_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void copy_device(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0 || dst == src) return;
    HYCC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void zero(void* device, size_t bytes) override {
    if (bytes != 0) HYCC_CUDA_CHECK(cudaMemsetAsync(device, 0, bytes, stream_));
  }
  void synchronize() override {
    count_host_sync();
    HYCC_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  size_t encode(const CodecConfig& config, ConstTensorView in, void* out, size_t capacity,
                uint64_t seed) override {
    return encode_device(config, in, out, capacity, CompressOptions{seed}, stream_);
  }

  void decode(const CodecConfig& config, const void* payload, size_t bytes,
              TensorView out) override {
    detail::decode_device_deferred(config, payload, bytes, out, stream_, decode_failed_);
  }

  void defer_decode_checks(uint32_t* failed) override { decode_failed_ = failed; }

  void decode_accumulate(const CodecConfig& config, const void* payload, size_t bytes, DType wire,
                         ConstTensorView own, float* partial) override {
    const size_t n = own.count;
    if (n == 0) return;
    const void* decoded = partial;
    std::exception_ptr corrupt;
    try {
      if (wire == DType::kF32) {
        detail::decode_device_deferred(config, payload, bytes, {DType::kF32, n, partial}, stream_,
                                       decode_failed_);
      } else {
        if (narrow_.bytes() < n * 2) narrow_ = take(false, n * 2, stream_);
        detail::decode_device_deferred(config, payload, bytes, {wire, n, narrow_.data()}, stream_,
                                       decode_failed_);
        decoded = narrow_.data();
      }
    } catch (const CorruptStream&) {
      corrupt = std::current_exception();
      decoded = nullptr;  // counts as zeros
    }
    accumulate(decoded, wire, own, partial);
    if (corrupt) {
      synchronize();
      std::rethrow_exception(corrupt);
    }
  }

  // The casts' and quant's hop (codec::cuda::cast_hop, quant_hop): reads the payload and `own`,
  // writes the payload.
  bool hop(const CodecConfig& config, const void* payload, size_t bytes, DType wire,
           ConstTensorView own, void* out, size_t capacity, uint64_t seed, size_t* size) override {
    if (config.id() == CodecId::kQuant) {
      if (capacity < bytes ||
          !codec::cuda::quant_hop(codec::cuda::quant_params(config),
                                  static_cast<const uint8_t*>(payload), bytes, wire, own,
                                  static_cast<uint8_t*>(out), seed, stream_, decode_failed_)) {
        return false;
      }
      *size = bytes;  // the same geometry in and out
      return true;
    }
    if (config.id() != CodecId::kBF16 && config.id() != CodecId::kFP16) return false;
    const size_t n = own.count;
    if (bytes != 2 * n || capacity < 2 * n) return false;
    codec::cuda::cast_hop(config.id() == CodecId::kBF16 ? DType::kBF16 : DType::kF16, payload, wire,
                          own, out, stream_);
    *size = 2 * n;
    return true;
  }

  void round_into(const float* partial, ReduceOp op, int size, TensorView out) override {
    if (out.count == 0) return;
    round_kernel<<<grid_for(out.count, kThreads), kThreads, 0, stream_>>>(
        partial, op == ReduceOp::kAverage, static_cast<float>(size), out.count, out.data,
        out.dtype);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  uint64_t checksum(const void* data, size_t bytes) override {
    uint64_t h = splitmix64(bytes);
    if (bytes == 0) return h;
    const unsigned long long* sum = queue_checksum_terms(data, bytes);
    unsigned long long terms = 0;
    count_host_sync();  // a copy into pageable memory waits
    HYCC_CUDA_CHECK(cudaMemcpyAsync(&terms, sum, 8, cudaMemcpyDeviceToHost, stream_));
    synchronize();
    return h + static_cast<uint64_t>(terms);
  }

  void write_checksum(const void* data, size_t bytes, void* trailer) override {
    store_checksum_kernel<<<1, 1, 0, stream_>>>(queue_checksum_terms(data, bytes), bytes,
                                                static_cast<unsigned char*>(trailer));
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  void verify_checksum(const void* data, size_t bytes, const void* trailer, uint32_t* failed,
                       uint32_t ordinal) override {
    check_checksum_kernel<<<1, 1, 0, stream_>>>(queue_checksum_terms(data, bytes), bytes,
                                                static_cast<const unsigned char*>(trailer), failed,
                                                ordinal);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  void signal(uint32_t* word, uint32_t value) override {
    signal_kernel<<<1, 1, 0, stream_>>>(word, value);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  void clear_nonfinite(float* data, size_t n) override {
    if (n == 0) return;
    grow(flag_, 4);  // written, never read
    zero_nonfinite_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_>>>(
        data, n, static_cast<uint32_t*>(flag_.data()));
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  bool zero_nonfinite(float* data, size_t n) override {
    if (n == 0) return false;
    grow(flag_, 4);
    auto* flag = static_cast<uint32_t*>(flag_.data());
    HYCC_CUDA_CHECK(cudaMemsetAsync(flag, 0, 4, stream_));
    zero_nonfinite_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_>>>(data, n, flag);
    HYCC_CUDA_CHECK(cudaGetLastError());
    uint32_t found = 0;
    count_host_sync();  // a copy into pageable memory waits
    copy_to_host(&found, flag, 4);
    synchronize();
    return found != 0;
  }

  void subtract(const float* a, const float* b, float* out, size_t n) override {
    elementwise(a, b, out, n, false);
  }
  void add(const float* a, const float* b, float* out, size_t n) override {
    elementwise(a, b, out, n, true);
  }

 private:
  void elementwise(const float* a, const float* b, float* out, size_t n, bool sum) {
    if (n == 0) return;
    subtract_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_>>>(a, b, out, n, sum);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  // Replaces `scratch` with a block of at least `bytes` if it is smaller (the old one is freed
  // in stream order, after the work queued before, which may still use it).
  void grow(Memory& scratch, size_t bytes) {
    if (scratch.bytes() >= bytes) return;
    scratch = take(false, bytes, stream_);
  }

  // Queues the sum of the checksum terms of the payload into the scratch word (device memory),
  // which it returns; the word is reused by the next checksum queued on the stream.
  const unsigned long long* queue_checksum_terms(const void* data, size_t bytes) {
    if (checksum_.bytes() < 8) checksum_ = take(false, 8, stream_);
    auto* sum = static_cast<unsigned long long*>(checksum_.data());
    HYCC_CUDA_CHECK(cudaMemsetAsync(sum, 0, 8, stream_));
    if (bytes == 0) return sum;
    const uint64_t words = checksum_words(bytes);
    const unsigned blocks =
        static_cast<unsigned>(std::min<uint64_t>(grid_for(words, kThreads), 1024));
    const bool aligned = reinterpret_cast<uintptr_t>(data) % 8 == 0;
    checksum_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const unsigned char*>(data),
                                                      bytes, words, aligned, sum);
    HYCC_CUDA_CHECK(cudaGetLastError());
    return sum;
  }

  void accumulate(const void* decoded, DType wire, ConstTensorView own, float* partial) {
    accumulate_kernel<<<grid_for(own.count, kThreads), kThreads, 0, stream_>>>(
        decoded, wire, own.data, own.dtype, own.count, partial);
    HYCC_CUDA_CHECK(cudaGetLastError());
  }

  cudaStream_t stream_;
  uint32_t* decode_failed_ = nullptr;  // defer_decode_checks
  Memory narrow_;    // 16-bit payloads of step 0, decoded before they are widened and added
  Memory checksum_;  // the checksum kernel's sum
  Memory flag_;      // zero_nonfinite's answer
};

}  // namespace

std::unique_ptr<DeviceOps> make_cuda_ops(DeviceStream stream) {
  if (!device_runs_kernels()) {
    throw Unavailable(tagged("coll:device", "CUDA backend: ", device_unavailable_reason()));
  }
  return std::make_unique<CudaOps>(stream);
}

}  // namespace hycc::device
