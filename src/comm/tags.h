// hycc's MPI tags and the MPI helpers every layer that calls MPI shares. hycc's tags lie in the
// upper half of MPI_TAG_UB (of a group's tag space: comm/group.h), out of the way of the program's:
// base + 8 * user_tag + slot, where base is just above MPI_TAG_UB / 2 and the slot names the
// operation (1 + Operation, 7 for device point to point, 0 reserved).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/dtype.h"

namespace hycc::comm {

// hycc's tag for `op` with user tag `user_tag`. Throws InvalidArgument if user_tag is negative
// or the result exceeds MPI_TAG_UB.
int internal_tag(const Communicator& comm, int user_tag, Operation op);
// The tag of device point to point (send_device/recv_device) with `user_tag`.
int device_p2p_tag(const Communicator& comm, int user_tag);
// base + 0: a tag of hycc's that no operation uses (the NCCL stand-in's, the calibration's).
int reserved_tag(MPI_Comm comm);  // the NCCL stand-in has only the MPI communicator
int reserved_tag(const Communicator& comm);
// The largest user tag hycc accepts on `comm`.
int64_t max_user_tag(const Communicator& comm);

// Counts as int for MPI calls; throws InvalidArgument past INT_MAX.
int mpi_count(size_t n, const char* what);
// The MPI type that moves elements of `dtype` unchanged (MPI_FLOAT or MPI_UINT16_T).
MPI_Datatype mpi_type(DType dtype);

}  // namespace hycc::comm
