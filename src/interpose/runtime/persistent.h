// Persistent point-to-point requests of libhycc_mpi.so on routed communicators
// (runtime/persistent.cc, mpi/persistent_calls.cc). The completion calls (mpi/completion_calls.cc)
// work on a round's request in place of the persistent handle the program holds.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

namespace hycc::interpose {

// Whether any of the n requests is a persistent request of hycc's (cheap while there is none).
bool any_persistent(int n, const MPI_Request* requests);

// A new persistent request of hycc's on comm, whose every MPI_Start runs `start` (the library's
// nonblocking call, which gives the round's request) and whose handle is *request.
int make_persistent(MPI_Comm comm, std::function<int(MPI_Request*)> start, MPI_Request* request);

// MPI_Request_free of a persistent request of hycc's: an active round is freed as MPI_Request_free
// frees a nonblocking request (a send completes in the background; a receive is never
// decoded), then the handle.
int free_persistent(MPI_Request* request);
// MPI_Start of a persistent request of ours: starts its next round.
int start(MPI_Request handle);

// The requests a completion call is given, with each persistent handle of hycc's replaced by its
// round's request (MPI_REQUEST_NULL when it was not started: MPI treats an inactive persistent
// request as a null one, so every completion call answers alike). On destruction the program's
// array gets the outcome back: its other requests as MPI left them, its persistent handles as
// they were, and the rounds that completed make their handles inactive again.
class RoundRequests {
 public:
  RoundRequests(int n, MPI_Request* given);
  RoundRequests(const RoundRequests&) = delete;
  RoundRequests& operator=(const RoundRequests&) = delete;
  ~RoundRequests();
  MPI_Request* data() { return rounds_.data(); }

 private:
  MPI_Request* given_;
  std::vector<MPI_Request> rounds_;
  std::vector<bool> persistent_;
};

// `call` (a completion call of the library's) on the n requests with the rounds in place of hycc's
// persistent handles, the outcome written back as RoundRequests says.
template <typename Call>
int on_rounds(int n, MPI_Request* requests, Call&& call) {
  RoundRequests rounds(n, requests);
  return call(rounds.data());
}

}  // namespace hycc::interpose
