// The public collective operations on device memory: the one place a device call's codec is
// decided. With options.policy set, the policy decides (policy_device.cc: a codec, or for the
// reductions the engine's device gradient compressor, measured against a native reference when
// sampled); otherwise the caller's options run as they are, in the algorithm layer
// (coll/entry.h).
#include "coll/entry.h"
#include "grad/low_rank_plan.h"
#include "policy/policy_calls.h"

namespace hycc {

void allreduce_device(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                      const DeviceCollectiveOptions& options) {
  if (options.policy == nullptr) {
    return coll::run_allreduce_device(comm, send, recv, op, options);
  }
  grad::require_layout(policy::policy_grad_layout(options.key, options.pieces), send.count,
                       "policy:allreduce_device");
  policy::run_with_policy(
      comm, Operation::kAllreduce, send.bytes(), send.dtype, options,
      [&](const DeviceCollectiveOptions& o) {
        coll::run_allreduce_device(comm, send, recv, op, o);
      },
      [&](DeviceGradCompressor& g, const DeviceCollectiveOptions& o) {
        return coll::with_native_reference(
            o, send, recv,
            [&](ConstTensorView s, TensorView r, const AlgorithmOptions& h) {
              coll::run_allreduce(comm, s, r, op, h);
            },
            [&] {
              const GradTensor tensor = policy::policy_grad_tensor(
                  *options.policy, comm, Operation::kAllreduce, options.key, options.pieces,
                  options.key_buffer, options.key_count, send);
              return g.allreduce(comm, tensor, send, recv, op, o);
            });
      });
}

void reduce_scatter_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                           ReduceOp op, const DeviceCollectiveOptions& options) {
  if (options.policy == nullptr) {
    return coll::run_reduce_scatter_device(comm, send, recv, op, options);
  }
  grad::require_layout(policy::policy_grad_layout(options.key, options.pieces), send.count,
                       "policy:reduce_scatter_device");
  policy::run_with_policy(
      comm, Operation::kReduceScatter, send.bytes(), send.dtype, options,
      [&](const DeviceCollectiveOptions& o) {
        coll::run_reduce_scatter_device(comm, send, recv, op, o);
      },
      [&](DeviceGradCompressor& g, const DeviceCollectiveOptions& o) {
        return coll::with_native_reference(
            o, send, recv,
            [&](ConstTensorView s, TensorView r, const AlgorithmOptions& h) {
              coll::run_reduce_scatter(comm, s, r, op, h);
            },
            [&] {
              const GradTensor tensor = policy::policy_grad_tensor(
                  *options.policy, comm, Operation::kReduceScatter, options.key, options.pieces,
                  options.key_buffer, options.key_count, send);
              return g.reduce_scatter(comm, tensor, send, recv, op, o);
            });
      });
}

void allgather_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                      const DeviceCollectiveOptions& options) {
  if (options.policy == nullptr) return coll::run_allgather_device(comm, send, recv, options);
  policy::run_with_policy(
      comm, Operation::kAllgather, recv.bytes(), recv.dtype, options,
      [&](const DeviceCollectiveOptions& o) { coll::run_allgather_device(comm, send, recv, o); });
}

void broadcast_device(const Communicator& comm, TensorView buffer, int root,
                      const DeviceCollectiveOptions& options) {
  if (options.policy == nullptr) return coll::run_broadcast_device(comm, buffer, root, options);
  policy::run_with_policy(
      comm, Operation::kBroadcast, buffer.bytes(), buffer.dtype, options,
      [&](const DeviceCollectiveOptions& o) { coll::run_broadcast_device(comm, buffer, root, o); });
}

void alltoall_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                     const DeviceCollectiveOptions& options) {
  if (options.policy == nullptr) return coll::run_alltoall_device(comm, send, recv, options);
  policy::run_with_policy(
      comm, Operation::kAlltoall, send.bytes(), send.dtype, options,
      [&](const DeviceCollectiveOptions& o) { coll::run_alltoall_device(comm, send, recv, o); });
}

void send_device(const Communicator& comm, ConstTensorView data, int dest, int tag,
                 const DeviceCollectiveOptions& options) {
  if (options.policy == nullptr) return coll::run_send_device(comm, data, dest, tag, options);
  policy::run_with_policy(
      comm, Operation::kSendRecv, data.bytes(), data.dtype, options,
      [&](const DeviceCollectiveOptions& o) { coll::run_send_device(comm, data, dest, tag, o); });
}

}  // namespace hycc
