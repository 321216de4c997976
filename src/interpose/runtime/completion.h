// Requests the program holds for work a thread of the library completes (the progress thread's
// two-stage allreduces, the communicators' workers): generalized requests (MPI_Grequest_start),
// so MPI_Wait, MPI_Test and the rest of their family work on them unchanged.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>

namespace hycc::interpose {

struct Completion {
  MPI_Request request = MPI_REQUEST_NULL;
  // What the request completes with: set by complete() on the library's thread, read by the
  // query callback on the program's. MPI_Grequest_complete orders the two, but an MPI is not
  // instrumented for ThreadSanitizer, so the order is stated here too (release/acquire).
  std::atomic<int> error{MPI_SUCCESS};
};

// Starts a generalized request, sets *request to it and returns its state. Throws CommError.
std::shared_ptr<Completion> start_completion(MPI_Request* request);

// Completes c's request with `error` (MPI_SUCCESS, or the code of a failure already reported).
void complete(Completion& c, int error);

// True when one of the n requests is such a request, not yet freed. MPICH 4.0's MPI_Waitall
// stops at an assertion on a generalized request another thread completes, so the MPI_Waitall
// wrapper waits for such arrays one request at a time.
bool any_completion(int n, const MPI_Request requests[]);

}  // namespace hycc::interpose
