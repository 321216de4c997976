// The C arguments of the collectives, checked and converted into what the C++ calls take; shared
// by the host (capi_collectives.cc) and device (capi_device.cc) entry points.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/dtype.h"
#include "hycc/hycc.h"

namespace hycc::capi {

// A send and a receive tensor on a communicator.
struct TwoTensors {
  Communicator comm;
  ConstTensorView send;
  TensorView recv;
};

// One tensor on a communicator.
struct OneTensor {
  Communicator comm;
  TensorView data;
};

// allreduce and alltoall: count elements each; send MPI_IN_PLACE means send = recv.
TwoTensors same_count_tensors(const void* send, void* recv, size_t count, int dtype, MPI_Comm comm,
                              const char* function);
// reduce_scatter: recv holds this rank's chunk of send_count.
TwoTensors reduce_scatter_tensors(const void* send, size_t send_count, void* recv, int dtype,
                                  MPI_Comm comm, const char* function);
// allgather: recv holds size * send_count; send MPI_IN_PLACE means this rank's block of recv.
TwoTensors allgather_tensors(const void* send, size_t send_count, void* recv, int dtype,
                             MPI_Comm comm, const char* function);
// broadcast, send and recv (the pointer is only read for send).
OneTensor one_tensor(const void* data, size_t count, int dtype, MPI_Comm comm,
                     const char* function);

ReduceOp to_op(int op, const char* function);
// Copies what a call did into the caller's hycc_call_stats (when it is not NULL).
void publish_stats(const CollectiveStats& stats, hycc_call_stats* out);

}  // namespace hycc::capi
