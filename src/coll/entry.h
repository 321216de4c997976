// The collective operations as the algorithm layer runs them: argument checks and the
// cross-rank agreement, the one-rank and empty short-circuits, native MPI or one of hycc's
// algorithms with the codec the caller gives, and the call's statistics. The public functions of
// hycc/collectives.h and hycc/collectives_device.h (policy/dispatch.cc, dispatch_device.cc)
// decide the codec once (options.policy, or the caller's codec) and call these with
// options.policy null; a policy set here is ignored.
#pragma once

#include <functional>

#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/comm.h"
#include "hycc/grad.h"

namespace hycc::coll {

void run_allreduce(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                   const AlgorithmOptions& options);
void run_reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv,
                        ReduceOp op, const AlgorithmOptions& options);
void run_allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
                   const AlgorithmOptions& options);
void run_broadcast(const Communicator& comm, TensorView buffer, int root,
                   const AlgorithmOptions& options);
void run_alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
                  const AlgorithmOptions& options);
void run_send(const Communicator& comm, ConstTensorView data, int dest, int tag,
              const AlgorithmOptions& options);

void run_allreduce_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                          ReduceOp op, const DeviceAlgorithmOptions& options);
void run_reduce_scatter_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                               ReduceOp op, const DeviceAlgorithmOptions& options);
void run_allgather_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                          const DeviceAlgorithmOptions& options);
void run_broadcast_device(const Communicator& comm, TensorView buffer, int root,
                          const DeviceAlgorithmOptions& options);
void run_alltoall_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                         const DeviceAlgorithmOptions& options);
void run_send_device(const Communicator& comm, ConstTensorView data, int dest, int tag,
                     const DeviceAlgorithmOptions& options);

// A host collective on host views of a device call's send and recv buffers.
using HostCall = std::function<void(ConstTensorView, TensorView, const AlgorithmOptions&)>;

// run(), a gradient compressor's call on the device buffers send/recv; with options.max_error
// set, also `native` on staged copies of them first (the uncompressed reference), and
// *options.max_error = the largest |difference| of recv from it (native_staged.cc).
GradStepStats with_native_reference(const DeviceAlgorithmOptions& options, ConstTensorView send,
                                    TensorView recv, const HostCall& native,
                                    const std::function<GradStepStats()>& run);

}  // namespace hycc::coll
