// Nonblocking requests of libhycc_mpi.so: point to point (the streams they own and, for
// receives, where the decoded floats go) and collectives (what decodes their slots). The
// MPI_Wait* / MPI_Test* wrappers finish them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "interpose/device_memory.h"

namespace hycc::interpose {

struct Pending {
  std::vector<std::byte> stream;
  // A receive's buffer (a host copy when it is device memory, stored back on completion);
  // nullptr: a send.
  std::unique_ptr<HostStaging> out;
  size_t capacity = 0;  // elements the receive buffer holds
  // MPI_Isendrecv's outgoing stream (the receive's is `stream`), kept until completion.
  std::vector<std::byte> outgoing;
  // The received stream's length from its own header, not from the status: MPICH 4.0's
  // MPI_Isendrecv completes with a status it has not filled in.
  bool length_from_stream = false;
  // The status of a receive completed at initiation (MPI_Isendrecv of a probed, held message):
  // the request is then its send's, whose status would not say what was received.
  std::optional<MPI_Status> received;
  // A nonblocking collective (interpose_nonblocking.cc): decodes into the program's buffers
  // once MPI has completed the request; a failure is reported as `call` on MPI_COMM_WORLD, as
  // for receives (the program may have freed the collective's communicator by then).
  std::function<void()> complete;
  const char* call = nullptr;
};

void track(MPI_Request request, Pending p);

// Before PMPI_Finalize: drops what MPI_Request_free'd requests MPI has completed and frees the
// others' MPI requests to MPI, which completes them (their streams stay to the end).
void release_detached();

// Decodes a received stream of `bytes` bytes into out (capacity floats) and sets the element
// count of `status` (unless MPI_STATUS_IGNORE); returns the element count. Throws CommError /
// CorruptStream.
size_t decode(const std::vector<std::byte>& stream, size_t bytes, float* out, size_t capacity,
              MPI_Status* status);

// Bytes a status says were received.
size_t received_bytes(const MPI_Status& status);

}  // namespace hycc::interpose
