// The persistent point-to-point calls of libhycc_mpi.so (MPI_Send_init, ..., MPI_Recv_init) and
// MPI_Start, MPI_Startall, MPI_Cancel on hycc's persistent requests (runtime/persistent.h).
#include <mpi.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "interpose/runtime/p2p.h"
#include "interpose/runtime/persistent.h"
#include "interpose/runtime/state.h"

namespace hycc::interpose {
namespace {

using IsendFunction = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);
using SendInitFunction = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);

// MPI_Send_init and its modes: each round is `isend` (the library's routed entry point of the
// same mode).
int send_init(IsendFunction isend, SendInitFunction native, const void* buf, int count,
              MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (p2p_route(comm, type, P2p::kSend, dest, tag, count) == nullptr) {
    return native(buf, count, type, dest, tag, comm, request);
  }
  return make_persistent(
      comm, [=](MPI_Request* r) { return isend(buf, count, type, dest, tag, comm, r); }, request);
}

// Starts the round of hycc's persistent request `handle`.
}  // namespace
}  // namespace hycc::interpose

namespace ip = hycc::interpose;

extern "C" {

int MPI_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request* request) {
  return ip::send_init(MPI_Isend, PMPI_Send_init, buf, count, type, dest, tag, comm, request);
}

int MPI_Ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return ip::send_init(MPI_Issend, PMPI_Ssend_init, buf, count, type, dest, tag, comm, request);
}

int MPI_Bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return ip::send_init(MPI_Ibsend, PMPI_Bsend_init, buf, count, type, dest, tag, comm, request);
}

int MPI_Rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return ip::send_init(MPI_Irsend, PMPI_Rsend_init, buf, count, type, dest, tag, comm, request);
}

int MPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request* request) {
  if (ip::p2p_route(comm, type, ip::P2p::kReceive, source, tag, count) == nullptr) {
    return PMPI_Recv_init(buf, count, type, source, tag, comm, request);
  }
  return ip::make_persistent(
      comm, [=](MPI_Request* r) { return MPI_Irecv(buf, count, type, source, tag, comm, r); },
      request);
}

int MPI_Start(MPI_Request* request) {
  if (!ip::any_persistent(1, request)) return PMPI_Start(request);
  return ip::start(*request);
}

// In order, each start MPI's or hycc's (the first failure ends it, as MPI_Startall reports one).
int MPI_Startall(int n, MPI_Request requests[]) {
  if (!ip::any_persistent(n, requests)) return PMPI_Startall(n, requests);
  for (int i = 0; i < n; ++i) {
    const int rc = MPI_Start(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request* request) {
  if (!ip::any_persistent(1, request)) return PMPI_Cancel(request);
  ip::RoundRequests round(1, request);
  MPI_Request* r = round.data();
  return *r == MPI_REQUEST_NULL ? PMPI_Cancel(request) : PMPI_Cancel(r);
}

}  // extern "C"
