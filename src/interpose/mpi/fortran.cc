// Fortran bindings of libhycc_mpi.so, mpif.h / `use mpi` and `use mpi_f08`: the lifecycle, the
// communicators the application makes and names, and the seven collectives, blocking and
// nonblocking (mpi/fortran.h says why and how).
#include "interpose/mpi/fortran.h"

#include <mpi.h>

#include <cstddef>

// NOLINTNEXTLINE(google-build-using-namespace): the helpers of every binding below
using namespace hycc::interpose::fortran;

namespace {

// ---- the calls both bindings share -------------------------------------------------------------

void init(Fint* ierror) { put(ierror, MPI_Init(nullptr, nullptr)); }

void init_thread(const Fint* required, Fint* provided, Fint* ierror) {
  int p = 0;
  put(ierror, MPI_Init_thread(nullptr, nullptr, *required, &p));
  *provided = p;
}

void finalize(Fint* ierror) { put(ierror, MPI_Finalize()); }

// A call that makes a communicator: the new one back to Fortran.
template <typename Make>
void made(Fint* newcomm, Fint* ierror, Make&& make) {
  MPI_Comm c = MPI_COMM_NULL;
  put(ierror, make(&c));
  *newcomm = MPI_Comm_c2f(c);
}

void comm_set_name(const Fint* comm, const char* name, Fint* ierror, size_t length) {
  put(ierror, MPI_Comm_set_name(comm_of(comm), fortran_string(name, length).c_str()));
}

void allreduce(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
               const Fint* op, const Fint* comm, Fint* ierror) {
  put(ierror, MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(type),
                            MPI_Op_f2c(*op), comm_of(comm)));
}

void reduce_scatter_block(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                          const Fint* op, const Fint* comm, Fint* ierror) {
  put(ierror, MPI_Reduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(type),
                                       MPI_Op_f2c(*op), comm_of(comm)));
}

void allgather(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
               const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* ierror) {
  put(ierror, MPI_Allgather(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                            *recvcount, type_of(recvtype), comm_of(comm)));
}

// Count and displacement arrays: Fortran INTEGERs are C ints here.
static_assert(sizeof(Fint) == sizeof(int));

void reduce_scatter(const void* sendbuf, void* recvbuf, const Fint* counts, const Fint* type,
                    const Fint* op, const Fint* comm, Fint* ierror) {
  put(ierror, MPI_Reduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), counts, type_of(type),
                                 MPI_Op_f2c(*op), comm_of(comm)));
}

void allgatherv(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
                const Fint* recvcounts, const Fint* displs, const Fint* recvtype, const Fint* comm,
                Fint* ierror) {
  put(ierror, MPI_Allgatherv(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                             recvcounts, displs, type_of(recvtype), comm_of(comm)));
}

void bcast(void* buffer, const Fint* count, const Fint* type, const Fint* root, const Fint* comm,
           Fint* ierror) {
  put(ierror, MPI_Bcast(c_buffer(buffer), *count, type_of(type), *root, comm_of(comm)));
}

void alltoall(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
              const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* ierror) {
  put(ierror, MPI_Alltoall(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                           *recvcount, type_of(recvtype), comm_of(comm)));
}

void iallreduce(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                const Fint* op, const Fint* comm, Fint* request, Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Iallreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(type),
                          MPI_Op_f2c(*op), comm_of(comm), r);
  });
}

void ireduce_scatter_block(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                           const Fint* op, const Fint* comm, Fint* request, Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Ireduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(type),
                                     MPI_Op_f2c(*op), comm_of(comm), r);
  });
}

void iallgather(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
                const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* request,
                Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Iallgather(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                          *recvcount, type_of(recvtype), comm_of(comm), r);
  });
}

void iallgatherv(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
                 const Fint* recvcounts, const Fint* displs, const Fint* recvtype, const Fint* comm,
                 Fint* request, Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Iallgatherv(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                           recvcounts, displs, type_of(recvtype), comm_of(comm), r);
  });
}

void ireduce_scatter(const void* sendbuf, void* recvbuf, const Fint* counts, const Fint* type,
                     const Fint* op, const Fint* comm, Fint* request, Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Ireduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), counts, type_of(type),
                               MPI_Op_f2c(*op), comm_of(comm), r);
  });
}

void ibcast(void* buffer, const Fint* count, const Fint* type, const Fint* root, const Fint* comm,
            Fint* request, Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Ibcast(c_buffer(buffer), *count, type_of(type), *root, comm_of(comm), r);
  });
}

void ialltoall(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
               const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* request,
               Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Ialltoall(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                         *recvcount, type_of(recvtype), comm_of(comm), r);
  });
}

}  // namespace

HYCC_MPIF_BEGIN

// ---- mpif.h and `use mpi` ----------------------------------------------------------------------

void mpi_init_(Fint* ierror) { init(ierror); }
void mpi_init_thread_(const Fint* required, Fint* provided, Fint* ierror) {
  init_thread(required, provided, ierror);
}
void mpi_finalize_(Fint* ierror) { finalize(ierror); }

void mpi_comm_dup_(const Fint* comm, Fint* newcomm, Fint* ierror) {
  made(newcomm, ierror, [&](MPI_Comm* c) { return MPI_Comm_dup(comm_of(comm), c); });
}
void mpi_comm_split_(const Fint* comm, const Fint* color, const Fint* key, Fint* newcomm,
                     Fint* ierror) {
  made(newcomm, ierror,
       [&](MPI_Comm* c) { return MPI_Comm_split(comm_of(comm), *color, *key, c); });
}
void mpi_comm_split_type_(const Fint* comm, const Fint* type, const Fint* key, const Fint* info,
                          Fint* newcomm, Fint* ierror) {
  made(newcomm, ierror, [&](MPI_Comm* c) {
    return MPI_Comm_split_type(comm_of(comm), *type, *key, MPI_Info_f2c(*info), c);
  });
}
void mpi_comm_create_(const Fint* comm, const Fint* group, Fint* newcomm, Fint* ierror) {
  made(newcomm, ierror,
       [&](MPI_Comm* c) { return MPI_Comm_create(comm_of(comm), MPI_Group_f2c(*group), c); });
}
void mpi_comm_set_name_(const Fint* comm, const char* name, Fint* ierror, size_t length) {
  comm_set_name(comm, name, ierror, length);
}

void mpi_allreduce_(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                    const Fint* op, const Fint* comm, Fint* ierror) {
  allreduce(sendbuf, recvbuf, count, type, op, comm, ierror);
}
void mpi_reduce_scatter_block_(const void* sendbuf, void* recvbuf, const Fint* count,
                               const Fint* type, const Fint* op, const Fint* comm, Fint* ierror) {
  reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm, ierror);
}
void mpi_allgather_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
                    const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* ierror) {
  allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror);
}
void mpi_reduce_scatter_(const void* sendbuf, void* recvbuf, const Fint* counts, const Fint* type,
                         const Fint* op, const Fint* comm, Fint* ierror) {
  reduce_scatter(sendbuf, recvbuf, counts, type, op, comm, ierror);
}
void mpi_allgatherv_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                     void* recvbuf, const Fint* recvcounts, const Fint* displs,
                     const Fint* recvtype, const Fint* comm, Fint* ierror) {
  allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierror);
}
void mpi_bcast_(void* buffer, const Fint* count, const Fint* type, const Fint* root,
                const Fint* comm, Fint* ierror) {
  bcast(buffer, count, type, root, comm, ierror);
}
void mpi_alltoall_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
                   const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* ierror) {
  alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror);
}

void mpi_iallreduce_(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                     const Fint* op, const Fint* comm, Fint* request, Fint* ierror) {
  iallreduce(sendbuf, recvbuf, count, type, op, comm, request, ierror);
}
void mpi_ireduce_scatter_block_(const void* sendbuf, void* recvbuf, const Fint* count,
                                const Fint* type, const Fint* op, const Fint* comm, Fint* request,
                                Fint* ierror) {
  ireduce_scatter_block(sendbuf, recvbuf, count, type, op, comm, request, ierror);
}
void mpi_iallgatherv_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                      void* recvbuf, const Fint* recvcounts, const Fint* displs,
                      const Fint* recvtype, const Fint* comm, Fint* request, Fint* ierror) {
  iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request,
              ierror);
}
void mpi_ireduce_scatter_(const void* sendbuf, void* recvbuf, const Fint* counts, const Fint* type,
                          const Fint* op, const Fint* comm, Fint* request, Fint* ierror) {
  ireduce_scatter(sendbuf, recvbuf, counts, type, op, comm, request, ierror);
}
void mpi_iallgather_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                     void* recvbuf, const Fint* recvcount, const Fint* recvtype, const Fint* comm,
                     Fint* request, Fint* ierror) {
  iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, ierror);
}
void mpi_ibcast_(void* buffer, const Fint* count, const Fint* type, const Fint* root,
                 const Fint* comm, Fint* request, Fint* ierror) {
  ibcast(buffer, count, type, root, comm, request, ierror);
}
void mpi_ialltoall_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype, void* recvbuf,
                    const Fint* recvcount, const Fint* recvtype, const Fint* comm, Fint* request,
                    Fint* ierror) {
  ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, ierror);
}

}  // HYCC_MPIF_BEGIN

#if !defined(OPEN_MPI)
using namespace mpif_h;  // NOLINT(google-build-using-namespace): the f08 functions call them
#endif

extern "C" {

// ---- `use mpi_f08`: handles are one-integer derived types (passed as the address of the
// integer), ierror is optional -------------------------------------------------------------------

void mpi_init_f08_(Fint* ierror) { init(ierror); }
void mpi_init_thread_f08_(const Fint* required, Fint* provided, Fint* ierror) {
  init_thread(required, provided, ierror);
}
void mpi_finalize_f08_(Fint* ierror) { finalize(ierror); }

void mpi_comm_dup_f08_(const Fint* comm, Fint* newcomm, Fint* ierror) {
  mpi_comm_dup_(comm, newcomm, ierror);
}
void mpi_comm_split_f08_(const Fint* comm, const Fint* color, const Fint* key, Fint* newcomm,
                         Fint* ierror) {
  mpi_comm_split_(comm, color, key, newcomm, ierror);
}
void mpi_comm_split_type_f08_(const Fint* comm, const Fint* type, const Fint* key, const Fint* info,
                              Fint* newcomm, Fint* ierror) {
  mpi_comm_split_type_(comm, type, key, info, newcomm, ierror);
}
void mpi_comm_create_f08_(const Fint* comm, const Fint* group, Fint* newcomm, Fint* ierror) {
  mpi_comm_create_(comm, group, newcomm, ierror);
}
void mpi_comm_set_name_f08_(const Fint* comm, const char* name, Fint* ierror, size_t length) {
  comm_set_name(comm, name, ierror, length);
}

void mpi_allreduce_f08_(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                        const Fint* op, const Fint* comm, Fint* ierror) {
  allreduce(sendbuf, recvbuf, count, type, op, comm, ierror);
}
void mpi_reduce_scatter_block_f08_(const void* sendbuf, void* recvbuf, const Fint* count,
                                   const Fint* type, const Fint* op, const Fint* comm,
                                   Fint* ierror) {
  reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm, ierror);
}
void mpi_allgather_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                        void* recvbuf, const Fint* recvcount, const Fint* recvtype,
                        const Fint* comm, Fint* ierror) {
  allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror);
}
void mpi_reduce_scatter_f08_(const void* sendbuf, void* recvbuf, const Fint* counts,
                             const Fint* type, const Fint* op, const Fint* comm, Fint* ierror) {
  reduce_scatter(sendbuf, recvbuf, counts, type, op, comm, ierror);
}
void mpi_allgatherv_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                         void* recvbuf, const Fint* recvcounts, const Fint* displs,
                         const Fint* recvtype, const Fint* comm, Fint* ierror) {
  allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierror);
}
void mpi_bcast_f08_(void* buffer, const Fint* count, const Fint* type, const Fint* root,
                    const Fint* comm, Fint* ierror) {
  bcast(buffer, count, type, root, comm, ierror);
}
void mpi_alltoall_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                       void* recvbuf, const Fint* recvcount, const Fint* recvtype, const Fint* comm,
                       Fint* ierror) {
  alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror);
}

void mpi_iallreduce_f08_(const void* sendbuf, void* recvbuf, const Fint* count, const Fint* type,
                         const Fint* op, const Fint* comm, Fint* request, Fint* ierror) {
  iallreduce(sendbuf, recvbuf, count, type, op, comm, request, ierror);
}
void mpi_ireduce_scatter_block_f08_(const void* sendbuf, void* recvbuf, const Fint* count,
                                    const Fint* type, const Fint* op, const Fint* comm,
                                    Fint* request, Fint* ierror) {
  ireduce_scatter_block(sendbuf, recvbuf, count, type, op, comm, request, ierror);
}
void mpi_iallgatherv_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                          void* recvbuf, const Fint* recvcounts, const Fint* displs,
                          const Fint* recvtype, const Fint* comm, Fint* request, Fint* ierror) {
  iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request,
              ierror);
}
void mpi_ireduce_scatter_f08_(const void* sendbuf, void* recvbuf, const Fint* counts,
                              const Fint* type, const Fint* op, const Fint* comm, Fint* request,
                              Fint* ierror) {
  ireduce_scatter(sendbuf, recvbuf, counts, type, op, comm, request, ierror);
}
void mpi_iallgather_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                         void* recvbuf, const Fint* recvcount, const Fint* recvtype,
                         const Fint* comm, Fint* request, Fint* ierror) {
  iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, ierror);
}
void mpi_ibcast_f08_(void* buffer, const Fint* count, const Fint* type, const Fint* root,
                     const Fint* comm, Fint* request, Fint* ierror) {
  ibcast(buffer, count, type, root, comm, request, ierror);
}
void mpi_ialltoall_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                        void* recvbuf, const Fint* recvcount, const Fint* recvtype,
                        const Fint* comm, Fint* request, Fint* ierror) {
  ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, ierror);
}

}  // extern "C"
