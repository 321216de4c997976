// The public collective operations on host memory: the one place a call's codec is decided. With
// options.policy set, the policy decides (policy_calls.cc: a codec, or a gradient compressor);
// otherwise the caller's options run as they are. Either way the algorithm layer
// (coll/entry.h) runs the call once.
#include "coll/entry.h"
#include "policy/policy_calls.h"

namespace hycc {

void allreduce(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
               const CollectiveOptions& options) {
  if (options.policy != nullptr) return policy::policy_allreduce(comm, send, recv, op, options);
  coll::run_allreduce(comm, send, recv, op, options);
}

void reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                    const CollectiveOptions& options) {
  if (options.policy != nullptr) {
    return policy::policy_reduce_scatter(comm, send, recv, op, options);
  }
  coll::run_reduce_scatter(comm, send, recv, op, options);
}

void allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
               const CollectiveOptions& options) {
  if (options.policy != nullptr) return policy::policy_allgather(comm, send, recv, options);
  coll::run_allgather(comm, send, recv, options);
}

void broadcast(const Communicator& comm, TensorView buffer, int root,
               const CollectiveOptions& options) {
  if (options.policy != nullptr) return policy::policy_broadcast(comm, buffer, root, options);
  coll::run_broadcast(comm, buffer, root, options);
}

void alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
              const CollectiveOptions& options) {
  if (options.policy != nullptr) return policy::policy_alltoall(comm, send, recv, options);
  coll::run_alltoall(comm, send, recv, options);
}

void send(const Communicator& comm, ConstTensorView data, int dest, int tag,
          const CollectiveOptions& options) {
  if (options.policy != nullptr) return policy::policy_send(comm, data, dest, tag, options);
  coll::run_send(comm, data, dest, tag, options);
}

}  // namespace hycc
