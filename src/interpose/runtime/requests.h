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

#include "interpose/runtime/device_memory.h"

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
  // A nonblocking collective (mpi/nonblocking_collectives.cc): decodes into the program's buffers
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

// Whether any of the n requests is one of ours (tracked); false inside the library.
bool any_ours(int n, const MPI_Request* requests);
// Finishes p, whose request MPI completed with `status`: runs a collective's completion, or
// decodes a receive's stream into the program's buffer. Returns an MPI error code.
int finish(Pending p, MPI_Status* status);
// Drops the detached requests MPI has completed (MPI_Request_free'd before completion).
void reap_detached();
// A receive of ours that MPI completed with `status`: sets the element count its stream's header
// gives (or the status of a receive completed at initiation). Nothing for other requests.
void report_received(MPI_Request request, MPI_Status& status);
// MPI_Request_free of a request of ours before completion: its MPI request is kept and its
// stream dropped once MPI has completed it. False if the request is no longer ours.
bool detach(MPI_Request request);

// Statuses for n requests: the caller's array, or a local one in place of MPI_STATUSES_IGNORE.
struct Statuses {
  std::vector<MPI_Status> local;
  MPI_Status* p;
  Statuses(int n, MPI_Status* given) : local(given == MPI_STATUSES_IGNORE ? size_t(n) : 0) {
    p = given == MPI_STATUSES_IGNORE ? local.data() : given;
  }
};

// Our entries for the requests a completion call is given, taken out of the table before MPI
// completes them and finished after: MPI frees a completed request's handle at once, and with
// MPI_THREAD_MULTIPLE another thread's next request may get the same handle and be tracked
// under it while this thread has yet to finish the old entry (MPICH reuses handles at once;
// the lost entry's stream was freed while MPI still sent it). Entries whose requests did not
// complete go back (their handles are still live, so no other request has them).
class Claimed {
 public:
  Claimed(int n, const MPI_Request* requests);
  Claimed(const Claimed&) = delete;
  Claimed& operator=(const Claimed&) = delete;
  ~Claimed();

  // Finishes request i, which MPI completed with `status` (if it is ours).
  int finish(int i, MPI_Status* status);
  // Finishes the completed requests: indices[k] with statuses[k] (k < n), or, with indices null,
  // every i < n with statuses[i]. Returns the first failure.
  int finish_all(int n, const int* indices, MPI_Status* statuses);

 private:
  std::vector<MPI_Request> handles_;
  std::vector<std::optional<Pending>> entries_;
};

}  // namespace hycc::interpose
