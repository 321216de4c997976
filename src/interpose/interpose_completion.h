// Requests the program holds for work a thread of the library completes (the progress thread's
// two-stage allreduces, the communicators' workers): generalized requests (MPI_Grequest_start),
// so MPI_Wait, MPI_Test and the rest of their family work on them unchanged.
#pragma once

#include <mpi.h>

#include <memory>

namespace hycc::interpose {

struct Completion {
  MPI_Request request = MPI_REQUEST_NULL;
  int error = MPI_SUCCESS;  // what the request completes with (set by complete())
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
