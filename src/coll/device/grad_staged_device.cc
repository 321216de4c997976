// DeviceGradCompressor's staged specs (powersgd, topk, sign): the gradient is copied to pinned
// host memory, the host GradCompressor runs its step there, and the result is copied back. The
// host's step is the reference of these methods, so the device call has its bits, its state and
// its statistics; the two copies are counted as local work.
#include <chrono>

#include "coll/device/device_entry.h"
#include "common/checksum.h"

namespace hycc::coll::device {

GradStepStats staged_grad_allreduce(const Communicator& comm, GradCompressor& host,
                                    const GradTensor& tensor, ConstTensorView grad, TensorView out,
                                    ReduceOp op, const DeviceCollectiveOptions& options) {
  ArgCheck check(OpKind::kAllreduce);
  std::exception_ptr unavailable;
  const std::unique_ptr<DeviceOps> ops = try_make_ops(check, options, unavailable);
  check_pair(check, ops.get(), "DeviceGradCompressor::allreduce", grad, out);
  check_same_count_or_buffer(check, "DeviceGradCompressor::allreduce", grad, out);
  check_reduce_op(check, op);
  DeviceCollectiveOptions plain = options;
  plain.codec = CodecConfig{};
  check_device_options(check, comm, OpKind::kAllreduce, plain);
  add_device_fields(check, grad.count, grad.dtype, plain);
  check.field("key", static_cast<int64_t>(tensor.key));
  check.field("spec hash",
              static_cast<int64_t>(checksum64(host.spec().data(), host.spec().size())));
  settle(check, comm, unavailable);  // so that no rank waits in the host step for one that threw

  const auto start = std::chrono::steady_clock::now();
  const Memory staged = ops->allocate_pinned(grad.bytes());
  ops->copy_to_host(staged.data(), grad.data, grad.bytes());
  ops->synchronize();
  GradStepStats stats = grad_allreduce(comm, host, tensor, {grad.dtype, grad.count, staged.data()},
                                       GradOptions{op, options.tag});
  ops->copy_to_device(out.data, staged.data(), out.bytes());
  ops->synchronize();
  stats.compress_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
      stats.comm_seconds;
  return stats;
}

}  // namespace hycc::coll::device
