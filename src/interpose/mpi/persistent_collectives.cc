// MPI 4's persistent collectives of libhycc_mpi.so (MPI_Allreduce_init, MPI_Bcast_init, ...) on
// float data: each MPI_Start runs the library's nonblocking call with the init call's arguments
// (MPI_Iallreduce, ...: compressed where the policy and the split form allow, error feedback
// keyed by the buffer as for every other call, otherwise MPI's own nonblocking call), on a
// persistent request of hycc's (runtime/persistent.h). A persistent collective is the natural
// form of a training loop's gradient allreduce: one buffer, reduced every step; left to MPI it
// went uncompressed. Other datatypes and other reduction operations are MPI's own persistent
// collectives (the large-count forms: mpi/large_count.cc). The MPI_Info argument is for
// MPI's own call; hycc's rounds have none to give.
#include <mpi.h>

#if MPI_VERSION >= 4

#include "interpose/runtime/persistent.h"
#include "interpose/runtime/routing.h"

namespace hycc::interpose {
namespace {

bool reduction_for_hycc(MPI_Datatype type, MPI_Op op) { return op == MPI_SUM && for_hycc(type); }

bool blocks_for_hycc(const void* sendbuf, MPI_Datatype sendtype, MPI_Datatype recvtype) {
  return for_hycc(sendbuf == MPI_IN_PLACE ? MPI_FLOAT : sendtype, recvtype);
}

}  // namespace
}  // namespace hycc::interpose

namespace ip = hycc::interpose;

extern "C" {

int MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  if (!ip::reduction_for_hycc(datatype, op)) {
    return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
  }
  return ip::make_persistent(
      comm,
      [=](MPI_Request* r) {
        return MPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, r);
      },
      request);
}

int MPI_Reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request* request) {
  if (!ip::reduction_for_hycc(datatype, op)) {
    return PMPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, datatype, op, comm, info,
                                          request);
  }
  return ip::make_persistent(
      comm,
      [=](MPI_Request* r) {
        return MPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, r);
      },
      request);
}

int MPI_Reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request* request) {
  if (!ip::reduction_for_hycc(datatype, op)) {
    return PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype, op, comm, info,
                                    request);
  }
  return ip::make_persistent(
      comm,
      [=](MPI_Request* r) {
        return MPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, r);
      },
      request);
}

int MPI_Bcast_init(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request* request) {
  if (!ip::for_hycc(datatype)) {
    return PMPI_Bcast_init(buffer, count, datatype, root, comm, info, request);
  }
  return ip::make_persistent(
      comm, [=](MPI_Request* r) { return MPI_Ibcast(buffer, count, datatype, root, comm, r); },
      request);
}

int MPI_Allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request* request) {
  if (!ip::blocks_for_hycc(sendbuf, sendtype, recvtype)) {
    return PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               info, request);
  }
  return ip::make_persistent(
      comm,
      [=](MPI_Request* r) {
        return MPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r);
      },
      request);
}

int MPI_Allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  if (!ip::blocks_for_hycc(sendbuf, sendtype, recvtype)) {
    return PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, info, request);
  }
  return ip::make_persistent(
      comm,
      [=](MPI_Request* r) {
        return MPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               comm, r);
      },
      request);
}

int MPI_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      MPI_Request* request) {
  if (!ip::blocks_for_hycc(sendbuf, sendtype, recvtype)) {
    return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              info, request);
  }
  return ip::make_persistent(
      comm,
      [=](MPI_Request* r) {
        return MPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r);
      },
      request);
}

}  // extern "C"

#endif  // MPI_VERSION >= 4
