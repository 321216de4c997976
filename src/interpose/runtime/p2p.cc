// Point to point of libhycc_mpi.so: which messages hycc carries (p2p_route; the calls are in
// mpi/p2p_calls.cc). On a communicator named after a dimension ("dp", "tp", "pp",
// "zero", "embedding"), MPI_FLOAT (or Fortran MPI_REAL) messages travel as one hycc stream each
// (the codec the policy chooses for the message size; codec none below the threshold or when
// compression would not shrink it) on the communicator's private point-to-point duplicate, with the
// application's tag. The receiver learns the codec and the element count from the stream.
// Nonblocking receives are decoded when the application completes them (MPI_Wait*, MPI_Test*),
// and so is MPI 4's MPI_Isendrecv (one request of streams on the duplicate).
// Device buffers of CUDA-aware programs are staged through host memory (device_memory.h).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "hycc/codec.h"
#include "hycc/policy_engine.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/p2p.h"
#include "interpose/runtime/state.h"

namespace hycc::interpose {

namespace {

// MPI_TAG_UB, the largest tag MPI takes.
int tag_upper_bound() {
  static const int bound = [] {
    int* value = nullptr;
    int found = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    return found != 0 && value != nullptr ? *value : 32767;  // 32767: the least MPI allows
  }();
  return bound;
}

bool valid_arguments(const CommState& s, P2p direction, int peer, int tag, int count) {
  const bool receive = direction == P2p::kReceive;
  const bool any_peer = receive && peer == MPI_ANY_SOURCE;
  const bool any_tag = receive && tag == MPI_ANY_TAG;
  return count >= 0 && (any_peer || (peer >= 0 && peer < s.comm.size())) &&
         (any_tag || (tag >= 0 && tag <= tag_upper_bound()));
}

}  // namespace

CommState* p2p_route(MPI_Comm comm, MPI_Datatype type, P2p direction, int peer, int tag,
                     int count) {
  if (inside() || engine() == nullptr || !is_float32(type) || peer == MPI_PROC_NULL) {
    return nullptr;
  }
  CommState* s = existing_state_of(comm);
  if (s == nullptr || !valid_arguments(*s, direction, peer, tag, count)) return nullptr;
  const Dimension d = dimension_of(s->comm, Operation::kSendRecv);
  if (d == Dimension::kOther) return nullptr;
  for (const PolicyRule& r : engine()->policy().rules()) {
    const bool applies = (!r.dimension || *r.dimension == d) &&
                         (!r.operation || *r.operation == Operation::kSendRecv);
    if (applies) return r.compressor == "none" && !r.adaptive() ? nullptr : s;  // the first decides
  }
  return nullptr;
}

}  // namespace hycc::interpose
