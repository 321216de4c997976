// Pieces shared by the public device entry points (collectives_device.cc, send_recv_device.cc):
// checks of device arguments, the choice of device operations and transport, statistics.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>

#include "coll/coll_internal.h"
#include "coll/device_ring.h"
#include "coll/entry.h"
#include "comm/device_call_check.h"
#include "comm/transport.h"
#include "device/device_ops.h"
#include "hycc/collectives_device.h"

namespace hycc::coll::device {

using comm::add_device_fields;
using comm::check_device_options;
using comm::check_device_view;
using comm::check_pair;
using comm::check_same_count_or_buffer;
using comm::make_transport;
using comm::settle;
using comm::try_make_ops;
using ::hycc::device::make_ops;

// `send` staged to pinned host memory and `host_call` run on it with Algorithm::kNative; returns
// the host result (recv.bytes() of pinned memory). native_staged.cc.
Memory native_on_host(DeviceOps& ops, ConstTensorView send, TensorView recv,
                      const DeviceAlgorithmOptions& options, const HostCall& host_call,
                      CollectiveStats* stats);
// The call below options.threshold_bytes: native_on_host, then the result copied back into
// `recv`. Fills *options.stats.
void run_native_staged(DeviceOps& ops, ConstTensorView send, TensorView recv,
                       const DeviceAlgorithmOptions& options,
                       std::chrono::steady_clock::time_point start, const HostCall& host_call);
// The largest |difference| between the device tensor `result` and a host one of its shape.
double max_error_against(DeviceOps& ops, ConstTensorView result, const Memory& reference);

// What an entry point hands to run_call().
struct CallSpec {
  Operation op;
  ConstTensorView send;
  TensorView recv;
  // Where the result is (recv; broadcast: the buffer), for DeviceCollectiveOptions::max_error.
  ConstTensorView result;
  size_t count = 0;          // elements of the call's signature (0: nothing to move)
  size_t message_bytes = 0;  // for the threshold and the statistics
  HostCall native;
  std::function<void(DeviceContext&)> algorithm;
  Algorithm ran = Algorithm::kRing;
  ReduceOp reduce = ReduceOp::kSum;  // allreduce, reduce_scatter
  int root = 0;                      // broadcast
};

// Whether a device call below the threshold runs NCCL's own collective (nccl_native.cc): the
// CUDA backend with the NCCL transport (kNccl, or kAuto where nccl_usable). Collective over comm.
bool takes_nccl_native(const Communicator& comm, const DeviceAlgorithmOptions& options);
// `call` (an allreduce, reduce-scatter, allgather, broadcast or alltoall) with NCCL's collective
// on the device buffers, in float32 for the reductions as the host's native path; fills
// *options.stats.
void run_nccl_native(DeviceOps& ops, const Communicator& comm, const CallSpec& call,
                     const DeviceAlgorithmOptions& options,
                     std::chrono::steady_clock::time_point start);

// The common end of the collective entry points, after their own argument checks: the option
// checks and the cross-rank agreement; then one rank or nothing to move (send copied to recv),
// the native path below options.threshold_bytes, or the device algorithm (with its transport,
// integrity check and deferred decoding errors), and the statistics.
void run_call(const Communicator& comm, const CallSpec& call, ArgCheck& check,
              const std::exception_ptr& unavailable, DeviceOps* ops,
              const DeviceAlgorithmOptions& options, std::chrono::steady_clock::time_point start);

// Fills *options.stats (if set); `counters` may be null for a call with nothing to do.
void report_device(const DeviceAlgorithmOptions& options, const Counters* counters, Algorithm ran,
                   size_t message_bytes, std::chrono::steady_clock::time_point start);

namespace testing {
// Device calls this process has run with NCCL's own collectives (nccl_native.cc).
size_t nccl_native_calls();
}  // namespace testing

}  // namespace hycc::coll::device
