// The collectives with CollectiveOptions::policy set: decide, run, record (hycc/policy_engine.h).
// The public functions of hycc/collectives.h forward here when options.policy is not null.
#pragma once

#include "hycc/collectives.h"

namespace hycc::policy {

void policy_allreduce(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                      const CollectiveOptions& options);
void policy_reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv,
                           ReduceOp op, const CollectiveOptions& options);
void policy_allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
                      const CollectiveOptions& options);
void policy_broadcast(const Communicator& comm, TensorView buffer, int root,
                      const CollectiveOptions& options);
void policy_alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
                     const CollectiveOptions& options);
void policy_send(const Communicator& comm, ConstTensorView data, int dest, int tag,
                 const CollectiveOptions& options);

}  // namespace hycc::policy
