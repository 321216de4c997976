// What the device collectives, transports and gradient compressors need from a device: memory,
// copies, codec payloads, float32 accumulation and rounding, ordered on one stream (the
// gradient compressors' own kernels are grad/device_kernels.h). Two implementations: CUDA
// (cuda/cuda_device_ops.cu, the device codecs of codec_device.h plus two small kernels) and a
// host emulation (host_device_ops.cc) in which "device memory" is host memory and the codecs are
// the CPU codecs' payloads, so that the algorithms, the staging and the pipelining run in the
// CPU tests. Both produce the same bits: the device codecs write the CPU codecs' payloads, and
// accumulation and rounding are the same float32 operations in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/dtype.h"

namespace hycc::device {

// Memory owned through the deleter of the DeviceOps that allocated it (device or pinned host),
// which gets the context it was made with (CUDA: the stream whose work the memory is freed after).
class Memory {
 public:
  using Deleter = void (*)(void* data, size_t bytes, void* context);
  Memory() = default;
  Memory(void* data, size_t bytes, Deleter free, void* context = nullptr)
      : data_(data), bytes_(bytes), free_(free), context_(context) {}
  ~Memory() { reset(); }
  Memory(Memory&& o) noexcept
      : data_(o.data_), bytes_(o.bytes_), free_(o.free_), context_(o.context_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  Memory& operator=(Memory&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = o.data_;
      bytes_ = o.bytes_;
      free_ = o.free_;
      context_ = o.context_;
      o.data_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  void reset() {
    if (data_ != nullptr && free_ != nullptr) free_(data_, bytes_, context_);
    data_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Deleter free_ = nullptr;
  void* context_ = nullptr;
};

// A codec payload in device memory: bytes [0, size) of `memory`, and the uncompressed bytes it
// holds (for statistics). A received payload keeps the checksum it came with in the
// kPayloadTrailer bytes after it (has_checksum), so that a forwarded payload carries it on
// unchanged (checksum_transport.cc).
struct Payload {
  Memory memory;
  size_t size = 0;
  size_t raw_bytes = 0;
  bool has_checksum = false;
  // The staged MPI transport's pinned copy of the message it arrived in (`staged_bytes` bytes),
  // kept so that forwarding the payload unchanged sends it without copying it back; dropped by
  // whatever rewrites the payload.
  Memory staged;
  size_t staged_bytes = 0;
  void rewritten() {
    has_checksum = false;
    staged.reset();
    staged_bytes = 0;
  }
  void* data() const { return memory.data(); }
  size_t capacity() const { return memory.bytes(); }
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual const char* name() const = 0;

  // True if `p` may be passed as device memory (the emulation takes any pointer).
  virtual bool is_device_memory(const void* p) const = 0;

  // Device memory and pinned host memory (the staging buffers of transfers), at least `bytes`
  // long. Implementations may keep freed blocks for the next call.
  virtual Memory allocate(size_t bytes) = 0;
  virtual Memory allocate_pinned(size_t bytes) = 0;

  // Copies ordered on the stream; they may return before the copy is done (see synchronize).
  virtual void copy_to_host(void* host, const void* device, size_t bytes) = 0;
  virtual void copy_to_device(void* device, const void* host, size_t bytes) = 0;
  virtual void copy_device(void* dst, const void* src, size_t bytes) = 0;
  // Sets `bytes` bytes of device memory to 0 (float32 +0), ordered on the stream.
  virtual void zero(void* device, size_t bytes) = 0;
  // Waits for everything queued on the stream.
  virtual void synchronize() = 0;

  // Writes the payload of `in` (compress() without its header) into `out` (capacity
  // config.codec().max_payload_bytes(in.dtype, in.count)); returns its size, which it waits
  // for.
  virtual size_t encode(const CodecConfig& config, ConstTensorView in, void* out, size_t capacity,
                        uint64_t seed) = 0;
  // Decodes a payload into `out`. Throws CorruptStream if it is malformed (out may then be
  // partly written).
  virtual void decode(const CodecConfig& config, const void* payload, size_t bytes,
                      TensorView out) = 0;
  // partial[i] = decoded[i] + own[i] in float32 (own widened exactly), where decoded are
  // own.count elements of `wire` decoded from the payload (widened exactly). A malformed payload
  // counts as zeros: partial[i] = own[i], then CorruptStream is thrown.
  virtual void decode_accumulate(const CodecConfig& config, const void* payload, size_t bytes,
                                 DType wire, ConstTensorView own, float* partial) = 0;
  // A ring hop in one pass over memory where `config` has a fused kernel: decodes the payload
  // (elements of `wire`, as decode_accumulate), adds `own` in float32 and encodes the sum into
  // `out` (capacity bytes) with `seed`, the bits decode_accumulate then encode would give; sets
  // *size and returns true. False (nothing done) where there is no such kernel or the payload
  // is not well formed: the caller takes the separate steps, which report it. Under
  // defer_decode_checks a malformed payload is recorded there instead, and the hop runs.
  virtual bool hop(const CodecConfig& /*config*/, const void* /*payload*/, size_t /*bytes*/,
                   DType /*wire*/, ConstTensorView /*own*/, void* /*out*/, size_t /*capacity*/,
                   uint64_t /*seed*/, size_t* /*size*/) {
    return false;
  }
  // Element i of `out` = partial[i] (divided by `size` for an average), rounded once into
  // out's dtype (round to nearest even).
  virtual void round_into(const float* partial, ReduceOp op, int size, TensorView out) = 0;
  // out[i] = a[i] - b[i] in float32, n elements (out may be a or b).
  virtual void subtract(const float* a, const float* b, float* out, size_t n) = 0;
  // out[i] = a[i] + b[i] in float32, n elements (out may be a or b).
  virtual void add(const float* a, const float* b, float* out, size_t n) = 0;
  // Sets the values of data[0, n) that are not finite to +0 (an error-feedback state after an
  // overflowed step, grad/method.h's restart_nonfinite); returns whether there were any, which
  // it waits for.
  virtual bool zero_nonfinite(float* data, size_t n) = 0;
  // zero_nonfinite, queued: the host neither waits nor learns whether there were any.
  virtual void clear_nonfinite(float* data, size_t n) { zero_nonfinite(data, n); }
  // payload_checksum() (payload_checksum.h) of `bytes` bytes of device memory; waits for it.
  virtual uint64_t checksum(const void* data, size_t bytes) = 0;
  // Queued, the host does not wait: the 8 bytes at `trailer` (device memory, any alignment)
  // become payload_checksum(data, bytes), little-endian.
  virtual void write_checksum(const void* data, size_t bytes, void* trailer) = 0;
  // Queued: if payload_checksum(data, bytes) differs from the 8 bytes at `trailer`, *failed (host
  // memory from allocate_pinned, which the device writes) becomes ordinal + 1 unless it is set
  // already.
  virtual void verify_checksum(const void* data, size_t bytes, const void* trailer,
                               uint32_t* failed, uint32_t ordinal) = 0;
  // Queued: *word (host memory from allocate_pinned) becomes `value` once everything queued before
  // is done; the host reads it without waiting (load_signal).
  virtual void signal(uint32_t* word, uint32_t value) = 0;
  // Until called again with nullptr: decode and decode_accumulate do not wait for the payload
  // checks of codecs that run them on the device (checks_payloads_on_device: quant's headers);
  // a malformed payload sets *failed (host memory from allocate_pinned) to 1 instead of
  // throwing, and what it decodes to is undefined. Implementations whose checks are done by the
  // time decode returns (the host emulation) throw as before.
  virtual void defer_decode_checks(uint32_t* /*failed*/) {}
};

// A word of pinned host memory that the device writes (verify_checksum, signal), read by the
// host without waiting.
inline uint32_t load_signal(const uint32_t* word) {
  return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

// The `bytes` bytes at `data` as a payload the caller lends to a transport: no deleter, so the
// memory stays the caller's and must outlive the send that takes it (until reclaim() hands the
// payload back).
inline Payload lent_payload(const void* data, size_t bytes) {
  Payload p;
  p.memory = Memory(const_cast<void*>(data), bytes, nullptr);
  p.size = bytes;
  return p;
}

// Room every payload buffer has after the largest payload it may hold: the checksum trailer.
inline constexpr size_t kPayloadTrailer = 8;
// A payload buffer for payloads of at most `bound` bytes.
inline Memory allocate_payload(DeviceOps& ops, size_t bound) {
  return ops.allocate(bound + kPayloadTrailer);
}
inline bool holds_payload(const Payload& p, size_t bound) {
  return p.capacity() >= bound + kPayloadTrailer;
}

// The device operations of `options.backend` (options.stream for CUDA); Unavailable if it cannot
// run here.
std::unique_ptr<DeviceOps> make_ops(const DeviceAlgorithmOptions& options);
// The host emulation (host_device_ops.cc).
// This thread's host operations: the host emulation, whose memory is host memory (the host
// algorithms' payload buffers and the MPI transport's receive buffers).
DeviceOps& host_ops();
std::unique_ptr<DeviceOps> make_host_emulated_ops();
// CUDA on `stream` (cuda/cuda_device_ops.cu); Unavailable in a build without CUDA
// (stub/device_ops_stub.cc) or without a device.
std::unique_ptr<DeviceOps> make_cuda_ops(DeviceStream stream);

}  // namespace hycc::device
