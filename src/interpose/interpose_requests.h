// Nonblocking point-to-point requests of libhycc_mpi.so: the streams they own and, for receives,
// where the decoded floats go. The MPI_Wait* / MPI_Test* wrappers finish them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace hycc::interpose {

struct Pending {
  std::vector<std::byte> stream;
  float* out = nullptr;  // nullptr: a send
  size_t capacity = 0;   // elements the receive buffer holds
  // A receive into device memory: out points into `host`, and the decoded elements are copied
  // to `device` when the receive completes.
  void* device = nullptr;
  std::unique_ptr<float[]> host;
};

void track(MPI_Request request, Pending p);

// Decodes a received stream of `bytes` bytes into out (capacity floats) and sets the element
// count of `status` (unless MPI_STATUS_IGNORE); returns the element count. Throws CommError /
// CorruptStream.
size_t decode(const std::vector<std::byte>& stream, size_t bytes, float* out, size_t capacity,
              MPI_Status* status);

// Bytes a status says were received.
size_t received_bytes(const MPI_Status& status);

}  // namespace hycc::interpose
