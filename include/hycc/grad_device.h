// Gradient compression on device buffers: the device counterpart of GradCompressor (hycc/grad.h),
// for every spec. docs/gpu.md describes it.
//
//   hycc::DeviceGradCompressor ef("ef+quant:bits=6");
//   hycc::DeviceCollectiveOptions o;
//   o.stream = stream;
//   ef.allreduce(grid.dp(), /*key=*/bucket_id, d_grad, d_grad, hycc::ReduceOp::kAverage, o);
//
// Every spec runs on the device with the float32 operations of GradCompressor in the same order,
// so that results, residuals and saved states are bit-identical to GradCompressor's
// (grad_allreduce) step after step, and each loads the other's save(). The state (float32
// residuals, PowerSGD's Q) lives in device memory of the backend of the first call of each key;
// options.codec is ignored (the spec names the codec).
// - ef+CODEC: acc = grad + e; every rank encodes acc once (seeded by key, step and rank); the
//   payloads go round a device ring (each rank forwards what it receives); every rank decodes
//   the p payloads and sums them in rank order; e = acc - decode(own payload). A codec without
//   device kernels (ef+zstd) takes the host path of codec_device.h.
// - ef2+CODEC: the two stages of the host method with the codec's device payloads (one per
//   chunk), moved by alltoall_device and allgather_device with codec none.
// - powersgd: M = grad + e viewed as a matrix (GradTensor::shape); P = M Q and Q = M^T P are
//   device kernels, P and Q (r (rows + cols) floats) go to the host for their allreduces and
//   P's orthogonalization, the result P Q^T is a device kernel. 1-D tensors and those that would
//   not compress take one plain allreduce, as on the host.
// - sign: the chunk coding (scales, bits, decoding, the server's sum) in device kernels, the
//   encoded words moved by alltoall_device and allgather_device with codec none.
// - topk: radix selection of the k largest magnitudes, the payload and the residual in device
//   kernels (what the host selects, ties to the lower index), the payloads moved by
//   allgather_device, every rank's pairs added in rank order. Tensors of up to 2^32 - 1 elements.
//
// Threads: steps of different keys may run at once on different threads (each on its own
// communicator, as MPI requires); the table of states is locked only to find or make a key's
// state, never across a step's communication. One key is stepped by one thread at a time, and
// reset(), save() and load() are not called during a step (PolicyEngine's grad_mutex() orders
// them for the engine's compressors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hycc/collectives_device.h"
#include "hycc/grad.h"

namespace hycc {

namespace grad {
struct GradSpec;
}
namespace grad {
struct GradState;
}

class DeviceGradCompressor {
 public:
  // Any gradient compressor spec (grad_help()); InvalidArgument for a malformed one.
  explicit DeviceGradCompressor(std::string_view spec);
  ~DeviceGradCompressor();
  DeviceGradCompressor(DeviceGradCompressor&&) noexcept;
  DeviceGradCompressor& operator=(DeviceGradCompressor&&) noexcept;

  const std::string& spec() const { return spec_; }

  // out = op (sum or average) over ranks of the compressed gradients, bit-identical on every
  // rank; grad and out are device memory of equal count and dtype (f32, bf16, f16), possibly the
  // same. Collective over comm; all ranks pass the same key, count, dtype and op. The tensor's
  // shape matters to PowerSGD only (GradTensor); the overload with a key passes none (1-D).
  GradStepStats allreduce(const Communicator& comm, const GradTensor& tensor, ConstTensorView grad,
                          TensorView out, ReduceOp op, const DeviceCollectiveOptions& options = {});
  GradStepStats allreduce(const Communicator& comm, uint64_t key, ConstTensorView grad,
                          TensorView out, ReduceOp op,
                          const DeviceCollectiveOptions& options = {}) {
    return allreduce(comm, GradTensor{key, {}}, grad, out, op, options);
  }

  // shard = this rank's chunk (chunk_range(grad.count, size, rank)) of the reduction, as
  // GradCompressor's grad_reduce_scatter gives it (same bits, same residual): ef+, ef2+ and sign
  // send each chunk to its owner only (the first of their two stages); the others run
  // allreduce() and keep the chunk. shard may be this rank's chunk of grad (in place).
  GradStepStats reduce_scatter(const Communicator& comm, const GradTensor& tensor,
                               ConstTensorView grad, TensorView shard, ReduceOp op,
                               const DeviceCollectiveOptions& options = {});
  GradStepStats reduce_scatter(const Communicator& comm, uint64_t key, ConstTensorView grad,
                               TensorView shard, ReduceOp op,
                               const DeviceCollectiveOptions& options = {}) {
    return reduce_scatter(comm, GradTensor{key, {}}, grad, shard, op, options);
  }

  void reset();
  void reset(uint64_t key);
  // Drops the state of `key` unless a step of it is running (on another thread); returns whether
  // a state was dropped. Safe beside steps of other keys.
  bool drop_if_idle(uint64_t key);
  // Number of tensors with state, and the bytes of device memory their states hold (between
  // steps: a running step may be resizing its state).
  size_t tensors() const;
  size_t state_bytes() const;
  // The state (residuals, step counters, rank and size of each key) as a checksummed blob in
  // GradCompressor::save()'s format: a host GradCompressor of the same spec loads it, and
  // load() takes what either saved, so that a resumed run continues with identical bits.
  std::vector<std::byte> save() const;
  // Replaces the state; it goes to device memory of options.backend (and stream).
  // Throws CorruptStream for a malformed blob, InvalidArgument for another spec's.
  void load(std::span<const std::byte> blob, const DeviceCollectiveOptions& options = {});
  // The residual of a key, copied to the host (empty if none).
  std::vector<float> residual(uint64_t key) const;

 private:
  // allreduce(), or with shard_only a reduce-scatter into `out` = this rank's chunk (for the
  // specs whose steps take grad::DeviceStep::shard_only).
  GradStepStats run(const Communicator& comm, const GradTensor& tensor, ConstTensorView grad,
                    TensorView out, ReduceOp op, const DeviceCollectiveOptions& options,
                    bool shard_only);

  std::string spec_;
  std::unique_ptr<grad::GradSpec> parsed_;
  // states_ (behind a pointer: compressors move); a state's address stays valid while other
  // keys come and go.
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  std::map<uint64_t, std::unique_ptr<grad::GradState>> states_;
  std::map<uint64_t, int> in_use_;  // running steps per key (under mutex_)
};

}  // namespace hycc
