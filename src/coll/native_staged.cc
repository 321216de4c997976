// Device calls below DeviceCollectiveOptions::threshold_bytes: the send data is copied to pinned
// host memory, the host collective runs natively (Algorithm::kNative: the MPI call), and the
// result is copied back. Small messages are latency-bound: one MPI call beats a ring of
// 2 (p - 1) compressed steps, as on the host. The same native call on staged copies is the
// uncompressed reference of a call with DeviceCollectiveOptions::max_error set.
#include <chrono>

#include "codec/float_io.h"
#include "coll/device_entry.h"
#include "coll/entry.h"

namespace hycc::coll::device {

Memory native_on_host(DeviceOps& ops, ConstTensorView send, TensorView recv,
                      const DeviceAlgorithmOptions& options, const HostCall& host_call,
                      CollectiveStats* stats) {
  const Memory in = ops.allocate_pinned(send.bytes());
  Memory out = ops.allocate_pinned(recv.bytes());
  ops.copy_to_host(in.data(), send.data, send.bytes());
  ops.synchronize();
  AlgorithmOptions native;
  native.algorithm = Algorithm::kNative;
  native.tag = options.tag;
  native.stats = stats;
  host_call({send.dtype, send.count, in.data()}, {recv.dtype, recv.count, out.data()}, native);
  return out;
}

void run_native_staged(DeviceOps& ops, ConstTensorView send, TensorView recv,
                       const DeviceAlgorithmOptions& options,
                       std::chrono::steady_clock::time_point start, const HostCall& host_call) {
  CollectiveStats stats;
  const Memory out = native_on_host(ops, send, recv, options, host_call, &stats);
  ops.copy_to_device(recv.data, out.data(), recv.bytes());
  ops.synchronize();
  if (options.stats != nullptr) {
    *options.stats = stats;
    options.stats->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

double max_error_against(DeviceOps& ops, ConstTensorView result, const Memory& reference) {
  const Memory got = ops.allocate_pinned(result.bytes());
  ops.copy_to_host(got.data(), result.data, result.bytes());
  ops.synchronize();
  return codec::max_abs_difference({result.dtype, result.count, got.data()},
                                   {result.dtype, result.count, reference.data()});
}

}  // namespace hycc::coll::device

namespace hycc::coll {

GradStepStats with_native_reference(const DeviceAlgorithmOptions& options, ConstTensorView send,
                                    TensorView recv, const HostCall& native,
                                    const std::function<GradStepStats()>& run) {
  if (options.max_error == nullptr) return run();
  const std::unique_ptr<device::DeviceOps> ops = device::make_ops(options);
  const device::Memory reference =
      device::native_on_host(*ops, send, recv, options, native, nullptr);
  const GradStepStats g = run();
  *options.max_error = device::max_error_against(*ops, recv, reference);
  return g;
}

}  // namespace hycc::coll
