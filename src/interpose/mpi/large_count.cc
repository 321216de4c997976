// The large-count forms of MPI 4 (MPI_Allreduce_c, MPI_Send_c, ...: counts as MPI_Count,
// displacements as MPI_Aint), for the MPI libraries that have them (MPICH 4 and what derives from
// it; Open MPI 4 and 5 have none). Programs reach them without asking: mpi4py 4 calls the _c
// form of every call it makes. A _c call of the calls libhycc_mpi.so routes, whose counts and
// displacements all fit in an int, is the int call with the same arguments (routed, compressed
// and counted as that one, and reported under its name); any other is MPI's own _c call. Point to
// point needs this for more than compression: a float message on a routed communicator travels on
// hycc's private duplicate, so a receive left to MPI would never see it.
#include <mpi.h>

#if MPI_VERSION >= 4

#include <climits>
#include <cstddef>
#include <vector>

#include "interpose/runtime/routing.h"

namespace hycc::interpose {
namespace {

bool fits(MPI_Count n) { return n >= INT_MIN && n <= INT_MAX; }

// The values[0, comm's size) as ints, or nothing when one does not fit or the communicator has
// no single size (an intercommunicator's counts are per remote rank; hycc does not route those).
template <typename T>
bool narrowed(const T* values, MPI_Comm comm, std::vector<int>* out) {
  int inter = 0, size = 0;
  if (values == nullptr || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter != 0 ||
      PMPI_Comm_size(comm, &size) != MPI_SUCCESS) {
    return false;
  }
  out->resize(size_t(size));
  for (int r = 0; r < size; ++r) {
    if (!fits(MPI_Count(values[r]))) return false;
    (*out)[size_t(r)] = int(values[r]);
  }
  return true;
}

}  // namespace
}  // namespace hycc::interpose

namespace ip = hycc::interpose;
using ip::fits;

extern "C" {

int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm) {
  if (!fits(count)) return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
  return MPI_Allreduce(sendbuf, recvbuf, int(count), datatype, op, comm);
}

int MPI_Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!fits(recvcount)) {
    return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
  }
  return MPI_Reduce_scatter_block(sendbuf, recvbuf, int(recvcount), datatype, op, comm);
}

int MPI_Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return MPI_Allgather(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, comm);
}

int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!fits(count)) return PMPI_Bcast_c(buffer, count, datatype, root, comm);
  return MPI_Bcast(buffer, int(count), datatype, root, comm);
}

int MPI_Alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return MPI_Alltoall(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, comm);
}

// The blocking vector calls may hand MPI the narrowed copies: MPI reads them only until it returns.
int MPI_Reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  std::vector<int> counts;
  if (!ip::narrowed(recvcounts, comm, &counts)) {
    return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  }
  return MPI_Reduce_scatter(sendbuf, recvbuf, counts.data(), datatype, op, comm);
}

int MPI_Allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm) {
  std::vector<int> counts, offsets;
  if (!fits(sendcount) || !ip::narrowed(recvcounts, comm, &counts) ||
      !ip::narrowed(displs, comm, &offsets)) {
    return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                             comm);
  }
  return MPI_Allgatherv(sendbuf, int(sendcount), sendtype, recvbuf, counts.data(), offsets.data(),
                        recvtype, comm);
}

int MPI_Iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
  return MPI_Iallreduce(sendbuf, recvbuf, int(count), datatype, op, comm, request);
}

int MPI_Ibcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Request* request) {
  if (!fits(count)) return PMPI_Ibcast_c(buffer, count, datatype, root, comm, request);
  return MPI_Ibcast(buffer, int(count), datatype, root, comm, request);
}

int MPI_Iallgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request* request) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Iallgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             request);
  }
  return MPI_Iallgather(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, comm,
                        request);
}

int MPI_Ireduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request* request) {
  if (!fits(recvcount)) {
    return PMPI_Ireduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
  }
  return MPI_Ireduce_scatter_block(sendbuf, recvbuf, int(recvcount), datatype, op, comm, request);
}

int MPI_Ialltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                            request);
  }
  return MPI_Ialltoall(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, comm,
                       request);
}

// The nonblocking vector calls: MPI may read the counts until the request completes, so a call
// left to MPI gets the program's own arrays (the narrowed copies live only in this call).
int MPI_Iallgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const auto native = [&] {
    return PMPI_Iallgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              comm, request);
  };
  std::vector<int> counts, offsets;
  if (!fits(sendcount) || !ip::narrowed(recvcounts, comm, &counts) ||
      !ip::narrowed(displs, comm, &offsets)) {
    return native();
  }
  return ip::iallgatherv(sendbuf, int(sendcount), sendtype, recvbuf, counts.data(), offsets.data(),
                         recvtype, comm, request, "MPI_Iallgatherv_c", native);
}

int MPI_Ireduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const auto native = [&] {
    return PMPI_Ireduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
  };
  std::vector<int> counts;
  if (!ip::narrowed(recvcounts, comm, &counts)) return native();
  return ip::ireduce_scatter(sendbuf, recvbuf, counts.data(), datatype, op, comm, request,
                             "MPI_Ireduce_scatter_c", native);
}

int MPI_Send_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm) {
  if (!fits(count)) return PMPI_Send_c(buf, count, datatype, dest, tag, comm);
  return MPI_Send(buf, int(count), datatype, dest, tag, comm);
}

int MPI_Ssend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm) {
  if (!fits(count)) return PMPI_Ssend_c(buf, count, datatype, dest, tag, comm);
  return MPI_Ssend(buf, int(count), datatype, dest, tag, comm);
}

int MPI_Bsend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm) {
  if (!fits(count)) return PMPI_Bsend_c(buf, count, datatype, dest, tag, comm);
  return MPI_Bsend(buf, int(count), datatype, dest, tag, comm);
}

int MPI_Rsend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm) {
  if (!fits(count)) return PMPI_Rsend_c(buf, count, datatype, dest, tag, comm);
  return MPI_Rsend(buf, int(count), datatype, dest, tag, comm);
}

int MPI_Recv_c(void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status* status) {
  if (!fits(count)) return PMPI_Recv_c(buf, count, datatype, source, tag, comm, status);
  return MPI_Recv(buf, int(count), datatype, source, tag, comm, status);
}

int MPI_Isend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Isend_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Isend(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Issend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Issend_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Issend(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Ibsend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Ibsend_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Ibsend(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Irsend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Irsend_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Irsend(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Irecv_c(void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Irecv_c(buf, count, datatype, source, tag, comm, request);
  return MPI_Irecv(buf, int(count), datatype, source, tag, comm, request);
}

int MPI_Send_init_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Send_init_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Send_init(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Ssend_init_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Ssend_init_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Ssend_init(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Bsend_init_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Bsend_init_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Bsend_init(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Rsend_init_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Rsend_init_c(buf, count, datatype, dest, tag, comm, request);
  return MPI_Rsend_init(buf, int(count), datatype, dest, tag, comm, request);
}

int MPI_Recv_init_c(void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                    MPI_Comm comm, MPI_Request* request) {
  if (!fits(count)) return PMPI_Recv_init_c(buf, count, datatype, source, tag, comm, request);
  return MPI_Recv_init(buf, int(count), datatype, source, tag, comm, request);
}

int MPI_Mrecv_c(void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message,
                MPI_Status* status) {
  if (!fits(count)) return PMPI_Mrecv_c(buf, count, datatype, message, status);
  return MPI_Mrecv(buf, int(count), datatype, message, status);
}

int MPI_Imrecv_c(void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message,
                 MPI_Request* request) {
  if (!fits(count)) return PMPI_Imrecv_c(buf, count, datatype, message, request);
  return MPI_Imrecv(buf, int(count), datatype, message, request);
}

int MPI_Sendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status);
  }
  return MPI_Sendrecv(sendbuf, int(sendcount), sendtype, dest, sendtag, recvbuf, int(recvcount),
                      recvtype, source, recvtag, comm, status);
}

int MPI_Sendrecv_replace_c(void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                           int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (!fits(count)) {
    return PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                   status);
  }
  return MPI_Sendrecv_replace(buf, int(count), datatype, dest, sendtag, source, recvtag, comm,
                              status);
}

int MPI_Isendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                    int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                    int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Isendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                            recvtype, source, recvtag, comm, request);
  }
  return MPI_Isendrecv(sendbuf, int(sendcount), sendtype, dest, sendtag, recvbuf, int(recvcount),
                       recvtype, source, recvtag, comm, request);
}

int MPI_Isendrecv_replace_c(void* buf, MPI_Count count, MPI_Datatype datatype, int dest,
                            int sendtag, int source, int recvtag, MPI_Comm comm,
                            MPI_Request* request) {
  if (!fits(count)) {
    return PMPI_Isendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                    request);
  }
  return MPI_Isendrecv_replace(buf, int(count), datatype, dest, sendtag, source, recvtag, comm,
                               request);
}

// The persistent collectives (mpi/persistent_collectives.cc); those with count arrays are
// MPI's own.

int MPI_Allreduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  if (!fits(count)) {
    return PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
  }
  return MPI_Allreduce_init(sendbuf, recvbuf, int(count), datatype, op, comm, info, request);
}

int MPI_Reduce_scatter_block_init_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request* request) {
  if (!fits(recvcount)) {
    return PMPI_Reduce_scatter_block_init_c(sendbuf, recvbuf, recvcount, datatype, op, comm, info,
                                            request);
  }
  return MPI_Reduce_scatter_block_init(sendbuf, recvbuf, int(recvcount), datatype, op, comm, info,
                                       request);
}

int MPI_Bcast_init_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request* request) {
  if (!fits(count)) return PMPI_Bcast_init_c(buffer, count, datatype, root, comm, info, request);
  return MPI_Bcast_init(buffer, int(count), datatype, root, comm, info, request);
}

int MPI_Allgather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Info info, MPI_Request* request) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                 info, request);
  }
  return MPI_Allgather_init(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype,
                            comm, info, request);
}

int MPI_Alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request* request) {
  if (!fits(sendcount) || !fits(recvcount)) {
    return PMPI_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                info, request);
  }
  return MPI_Alltoall_init(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype,
                           comm, info, request);
}

}  // extern "C"

#endif  // MPI_VERSION >= 4
