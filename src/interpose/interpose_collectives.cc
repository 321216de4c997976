// Collectives of libhycc_mpi.so: MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,
// MPI_Bcast and MPI_Alltoall on contiguous MPI_FLOAT data (with MPI_SUM for the reductions) go
// through hycc with the process's policy; every other call goes to the MPI library untouched.
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <exception>

#include "hycc/collectives.h"
#include "hycc/policy_engine.h"
#include "interpose/interpose_state.h"

namespace hycc::interpose {
namespace {

TensorView floats(void* data, size_t count) { return {DType::kF32, count, data}; }
ConstTensorView floats(const void* data, size_t count) { return {DType::kF32, count, data}; }

// The state of comm when the call is for hycc: the library is running, the caller is not hycc
// itself, and the data is float. The first call on a communicator the library has not seen
// makes its duplicates (collective, as the call itself is); if that fails, MPI does the call.
CommState* route(MPI_Comm comm, MPI_Datatype a, MPI_Datatype b = MPI_FLOAT) {
  if (inside() || engine() == nullptr || a != MPI_FLOAT || b != MPI_FLOAT) return nullptr;
  try {
    return state_of(comm);
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool compresses(const CommState& s, const PolicyDecision& d, size_t bytes) {
  const bool lossy = d.gradient || d.options.codec.id() != CodecId::kNone;
  return lossy && s.comm.size() > 1 && bytes > 0 && bytes >= d.threshold_bytes;
}

// The policy's decision for a call; when it leaves the call uncompressed, runs the application's
// own MPI call (so its results are exactly MPI's), records it and sets *rc.
template <typename Native>
bool left_to_mpi(const CommState& s, Operation op, size_t bytes, int* rc, Native&& native) {
  PolicyEngine& e = *engine();
  const PolicyDecision d = e.decide(s.comm, op, bytes);
  if (compresses(s, d, bytes)) return false;
  e.log_decision(s.comm, op, bytes, d);
  const auto start = std::chrono::steady_clock::now();
  *rc = native();
  CollectiveStats st;
  st.algorithm = Algorithm::kNative;
  st.message_bytes = st.raw_bytes = st.wire_bytes = bytes;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.record(s.comm, op, d, st);
  return true;
}

CollectiveOptions policy_options() {
  CollectiveOptions o;
  o.policy = engine();
  return o;
}

}  // namespace
}  // namespace hycc::interpose

using hycc::interpose::CommState;
using hycc::interpose::Inside;
namespace ip = hycc::interpose;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  CommState* s = op == MPI_SUM && count >= 0 ? ip::route(comm, datatype) : nullptr;
  if (s == nullptr) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  int rc = MPI_SUCCESS;
  if (ip::left_to_mpi(*s, hycc::Operation::kAllreduce, size_t(count) * sizeof(float), &rc, [&] {
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
      })) {
    return rc;
  }
  const Inside guard;
  try {
    const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    hycc::allreduce(s->comm, ip::floats(send, size_t(count)), ip::floats(recvbuf, size_t(count)),
                    hycc::ReduceOp::kSum, ip::policy_options());
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Allreduce", e.what());
  }
  return MPI_SUCCESS;
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  CommState* s = op == MPI_SUM && recvcount >= 0 ? ip::route(comm, datatype) : nullptr;
  if (s == nullptr)
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  int rc = MPI_SUCCESS;
  const size_t bytes = size_t(recvcount) * size_t(s->comm.size()) * sizeof(float);
  if (ip::left_to_mpi(*s, hycc::Operation::kReduceScatter, bytes, &rc, [&] {
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
      })) {
    return rc;
  }
  const Inside guard;
  try {
    const int size = s->comm.size();
    const int rank = s->comm.rank();
    const size_t n = size_t(recvcount);
    if (sendbuf == MPI_IN_PLACE) {
      // The input is all of recvbuf and the result goes to its start: reduce in place into
      // this rank's chunk (where hycc puts it), then move it to the front.
      float* all = static_cast<float*>(recvbuf);
      float* mine = all + n * size_t(rank);
      hycc::reduce_scatter(s->comm, ip::floats(all, n * size_t(size)), ip::floats(mine, n),
                           hycc::ReduceOp::kSum, ip::policy_options());
      if (rank != 0) std::memmove(all, mine, n * sizeof(float));
    } else {
      hycc::reduce_scatter(s->comm, ip::floats(sendbuf, n * size_t(size)), ip::floats(recvbuf, n),
                           hycc::ReduceOp::kSum, ip::policy_options());
    }
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Reduce_scatter_block", e.what());
  }
  return MPI_SUCCESS;
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  CommState* s = (in_place || sendcount == recvcount) && recvcount >= 0
                     ? ip::route(comm, in_place ? MPI_FLOAT : sendtype, recvtype)
                     : nullptr;
  if (s == nullptr) {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  int rc = MPI_SUCCESS;
  const size_t bytes = size_t(recvcount) * size_t(s->comm.size()) * sizeof(float);
  if (ip::left_to_mpi(*s, hycc::Operation::kAllgather, bytes, &rc, [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      })) {
    return rc;
  }
  const Inside guard;
  try {
    float* all = static_cast<float*>(recvbuf);
    const void* send = in_place ? all + size_t(recvcount) * size_t(s->comm.rank()) : sendbuf;
    const size_t n = size_t(recvcount);
    hycc::allgather(s->comm, ip::floats(send, n), ip::floats(recvbuf, n * size_t(s->comm.size())),
                    ip::policy_options());
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Allgather", e.what());
  }
  return MPI_SUCCESS;
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  CommState* s = count >= 0 ? ip::route(comm, datatype) : nullptr;
  if (s == nullptr) return PMPI_Bcast(buffer, count, datatype, root, comm);
  int rc = MPI_SUCCESS;
  if (ip::left_to_mpi(*s, hycc::Operation::kBroadcast, size_t(count) * sizeof(float), &rc,
                      [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); })) {
    return rc;
  }
  const Inside guard;
  try {
    hycc::broadcast(s->comm, ip::floats(buffer, size_t(count)), root, ip::policy_options());
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Bcast", e.what());
  }
  return MPI_SUCCESS;
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  CommState* s = (in_place || sendcount == recvcount) && recvcount >= 0
                     ? ip::route(comm, in_place ? MPI_FLOAT : sendtype, recvtype)
                     : nullptr;
  if (s == nullptr) {
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  int rc = MPI_SUCCESS;
  const size_t bytes = size_t(recvcount) * size_t(s->comm.size()) * sizeof(float);
  if (ip::left_to_mpi(*s, hycc::Operation::kAlltoall, bytes, &rc, [&] {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      })) {
    return rc;
  }
  const Inside guard;
  try {
    const size_t total = size_t(recvcount) * size_t(s->comm.size());
    hycc::alltoall(s->comm, ip::floats(in_place ? recvbuf : sendbuf, total),
                   ip::floats(recvbuf, total), ip::policy_options());
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Alltoall", e.what());
  }
  return MPI_SUCCESS;
}

}  // extern "C"
