// Device calls below DeviceCollectiveOptions::threshold_bytes: the send data is copied to pinned
// host memory, the host collective runs natively (Algorithm::kNative: the MPI call), and the
// result is copied back. Small messages are latency-bound: one MPI call beats a ring of
// 2 (p - 1) compressed steps, as on the host.
#include <chrono>

#include "coll/device/device_entry.h"

namespace hycc::coll::device {

void run_native_staged(
    DeviceOps& ops, ConstTensorView send, TensorView recv, const DeviceCollectiveOptions& options,
    std::chrono::steady_clock::time_point start,
    const std::function<void(ConstTensorView, TensorView, const CollectiveOptions&)>& host_call) {
  const Memory in = ops.allocate_pinned(send.bytes());
  const Memory out = ops.allocate_pinned(recv.bytes());
  ops.copy_to_host(in.data(), send.data, send.bytes());
  ops.synchronize();
  CollectiveStats stats;
  CollectiveOptions native;
  native.algorithm = Algorithm::kNative;
  native.tag = options.tag;
  native.stats = &stats;
  host_call({send.dtype, send.count, in.data()}, {recv.dtype, recv.count, out.data()}, native);
  ops.copy_to_device(recv.data, out.data(), recv.bytes());
  ops.synchronize();
  if (options.stats != nullptr) {
    *options.stats = stats;
    options.stats->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

}  // namespace hycc::coll::device
