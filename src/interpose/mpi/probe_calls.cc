// MPI_Probe and MPI_Iprobe of libhycc_mpi.so, on the held messages of runtime/held_messages.cc.
#include <mpi.h>
#include <sched.h>

#include <deque>
#include <exception>
#include <mutex>

#include "hycc/codec.h"
#include "hycc/error.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/p2p.h"
#include "interpose/runtime/requests.h"

namespace ip = hycc::interpose;

extern "C" {

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  ip::CommState* s = ip::p2p_route(comm, MPI_FLOAT, ip::P2p::kReceive, source, tag, 0);
  if (s == nullptr) return PMPI_Iprobe(source, tag, comm, flag, status);
  const ip::Inside guard;
  try {
    return ip::probe_once(*s, source, tag, comm, flag, status);
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Iprobe", e.what());
  }
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  ip::CommState* s = ip::p2p_route(comm, MPI_FLOAT, ip::P2p::kReceive, source, tag, 0);
  if (s == nullptr) return PMPI_Probe(source, tag, comm, status);
  const ip::Inside guard;
  try {
    for (;;) {
      int flag = 0;
      const int rc = ip::probe_once(*s, source, tag, comm, &flag, status);
      if (rc != MPI_SUCCESS || flag != 0) return rc;
      sched_yield();
    }
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Probe", e.what());
  }
}

}  // extern "C"
