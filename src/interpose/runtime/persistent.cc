// Persistent point-to-point requests of libhycc_mpi.so (the calls: mpi/persistent_calls.cc):
// MPI_Send_init, MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init and MPI_Recv_init of float messages
// on a routed communicator (runtime/p2p.h). MPI's own persistent request would send the floats on
// the program's communicator, where a routed receive never looks (and a persistent receive would
// miss a routed send): the two ends hung unless both were persistent. A compressed message has a
// new length each time, so no persistent request of MPI's can carry it; each start is instead one
// round of the routed nonblocking call (MPI_Isend, ..., MPI_Irecv), and the program holds a handle
// that stands for the request between rounds: a real, inactive persistent request of MPI's (a
// receive on a private duplicate of MPI_COMM_SELF that is never started), so the handle converts to
// Fortran, is freed by MPI_Request_free, and never equals another live request. MPI_Start,
// MPI_Startall, the completion calls, MPI_Cancel and MPI_Request_get_status put the round's request
// in its place. On other communicators, and for other types, these are MPI's own calls.
#include <mpi.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "interpose/runtime/persistent.h"
#include "interpose/runtime/state.h"

namespace hycc::interpose {
namespace {

struct Persistent {
  MPI_Comm comm = MPI_COMM_NULL;
  std::function<int(MPI_Request*)> start;  // starts one round: the routed nonblocking call
  MPI_Request round = MPI_REQUEST_NULL;    // the round's request; null while inactive
};

std::mutex g_mutex;
std::unordered_map<MPI_Request, Persistent> g_persistent;  // guarded by g_mutex
std::atomic<size_t> g_count{0};

}  // namespace

int start(MPI_Request handle) {
  MPI_Comm comm = MPI_COMM_NULL;
  std::function<int(MPI_Request*)> round;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    Persistent& p = g_persistent.at(handle);
    comm = p.comm;
    if (p.round == MPI_REQUEST_NULL) round = p.start;
  }
  if (!round) return fail(comm, "MPI_Start", "the persistent request is active already");
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = round(&r);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_persistent.at(handle).round = r;
  return rc;
}

int make_persistent(MPI_Comm comm, std::function<int(MPI_Request*)> start, MPI_Request* request) {
  // Not from MPI_PROC_NULL: MPICH 4.0.2 hangs every persistent collective made after a
  // persistent request from or to MPI_PROC_NULL was freed (tests/mpich/mpich_test.sh's MPI 4
  // program shows it; a receive from a real rank does not).
  const int rc = PMPI_Recv_init(nullptr, 0, MPI_BYTE, 0, 0, private_self_comm(), request);
  if (rc != MPI_SUCCESS) return rc;
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_persistent[*request] = Persistent{comm, std::move(start), MPI_REQUEST_NULL};
  g_count.fetch_add(1, std::memory_order_release);
  return MPI_SUCCESS;
}

int free_persistent(MPI_Request* request) {
  MPI_Request round = MPI_REQUEST_NULL;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_persistent.find(*request);
    round = it->second.round;
    g_persistent.erase(it);
    g_count.fetch_sub(1, std::memory_order_release);
  }
  if (round != MPI_REQUEST_NULL) {
    const int rc = MPI_Request_free(&round);
    if (rc != MPI_SUCCESS) return rc;
  }
  return PMPI_Request_free(request);
}

bool any_persistent(int n, const MPI_Request* requests) {
  if (g_count.load(std::memory_order_acquire) == 0) return false;
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (int i = 0; i < n; ++i) {
    if (g_persistent.count(requests[i]) != 0) return true;
  }
  return false;
}

RoundRequests::RoundRequests(int n, MPI_Request* given)
    : given_(given), rounds_(given, given + (n > 0 ? n : 0)), persistent_(rounds_.size()) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < rounds_.size(); ++i) {
    const auto it = g_persistent.find(rounds_[i]);
    if (rounds_[i] == MPI_REQUEST_NULL || it == g_persistent.end()) continue;
    persistent_[i] = true;
    rounds_[i] = it->second.round;
  }
}

RoundRequests::~RoundRequests() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < rounds_.size(); ++i) {
    if (!persistent_[i]) {
      given_[i] = rounds_[i];
      continue;
    }
    const auto it = g_persistent.find(given_[i]);
    if (it != g_persistent.end()) it->second.round = rounds_[i];
  }
}

}  // namespace hycc::interpose
