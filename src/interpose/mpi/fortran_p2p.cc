// Fortran bindings of libhycc_mpi.so, mpif.h / `use mpi` and `use mpi_f08`: point to point
// (every send mode, blocking, nonblocking and persistent), the probes and matched probes, and
// the completions, so that every message a Fortran program sends and receives goes the way a C
// program's does (mpi/fortran.h says why and how).
#include "interpose/mpi/fortran.h"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

// NOLINTNEXTLINE(google-build-using-namespace): the helpers of every binding below
using namespace hycc::interpose::fortran;

namespace {

using CSend = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
using CIsend = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);

// A send of any mode through the library's C entry point for it (MPI_Send, MPI_Ssend, ...).
void send_as(CSend send, const void* buf, const Fint* count, const Fint* type, const Fint* dest,
             const Fint* tag, const Fint* comm, Fint* ierror) {
  put(ierror, send(c_buffer(buf), *count, type_of(type), *dest, *tag, comm_of(comm)));
}

void isend_as(CIsend isend, const void* buf, const Fint* count, const Fint* type, const Fint* dest,
              const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  MPI_Request r = MPI_REQUEST_NULL;
  put(ierror, isend(c_buffer(buf), *count, type_of(type), *dest, *tag, comm_of(comm), &r));
  *request = MPI_Request_c2f(r);
}

}  // namespace

HYCC_MPIF_BEGIN

// ---- mpif.h and `use mpi` ----------------------------------------------------------------------

void mpi_send_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
               const Fint* tag, const Fint* comm, Fint* ierror) {
  send_as(MPI_Send, buf, count, type, dest, tag, comm, ierror);
}
void mpi_ssend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                const Fint* tag, const Fint* comm, Fint* ierror) {
  send_as(MPI_Ssend, buf, count, type, dest, tag, comm, ierror);
}
void mpi_bsend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                const Fint* tag, const Fint* comm, Fint* ierror) {
  send_as(MPI_Bsend, buf, count, type, dest, tag, comm, ierror);
}
void mpi_rsend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                const Fint* tag, const Fint* comm, Fint* ierror) {
  send_as(MPI_Rsend, buf, count, type, dest, tag, comm, ierror);
}
void mpi_recv_(void* buf, const Fint* count, const Fint* type, const Fint* source, const Fint* tag,
               const Fint* comm, Fint* status, Fint* ierror) {
  Status s(status);
  put(ierror,
      s.done(MPI_Recv(c_buffer(buf), *count, type_of(type), *source, *tag, comm_of(comm), s.c())));
}
void mpi_sendrecv_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                   const Fint* dest, const Fint* sendtag, void* recvbuf, const Fint* recvcount,
                   const Fint* recvtype, const Fint* source, const Fint* recvtag, const Fint* comm,
                   Fint* status, Fint* ierror) {
  Status s(status);
  put(ierror, s.done(MPI_Sendrecv(c_buffer(sendbuf), *sendcount, type_of(sendtype), *dest, *sendtag,
                                  c_buffer(recvbuf), *recvcount, type_of(recvtype), *source,
                                  *recvtag, comm_of(comm), s.c())));
}
void mpi_sendrecv_replace_(void* buf, const Fint* count, const Fint* type, const Fint* dest,
                           const Fint* sendtag, const Fint* source, const Fint* recvtag,
                           const Fint* comm, Fint* status, Fint* ierror) {
  Status s(status);
  put(ierror, s.done(MPI_Sendrecv_replace(c_buffer(buf), *count, type_of(type), *dest, *sendtag,
                                          *source, *recvtag, comm_of(comm), s.c())));
}
void mpi_isend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Isend, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_issend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                 const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Issend, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_ibsend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                 const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Ibsend, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_irsend_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                 const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Irsend, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_irecv_(void* buf, const Fint* count, const Fint* type, const Fint* source, const Fint* tag,
                const Fint* comm, Fint* request, Fint* ierror) {
  MPI_Request r = MPI_REQUEST_NULL;
  put(ierror, MPI_Irecv(c_buffer(buf), *count, type_of(type), *source, *tag, comm_of(comm), &r));
  *request = MPI_Request_c2f(r);
}

void mpi_send_init_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                    const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Send_init, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_ssend_init_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                     const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Ssend_init, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_bsend_init_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                     const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Bsend_init, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_rsend_init_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                     const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  isend_as(MPI_Rsend_init, buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_recv_init_(void* buf, const Fint* count, const Fint* type, const Fint* source,
                    const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  started(request, ierror, [&](MPI_Request* r) {
    return MPI_Recv_init(c_buffer(buf), *count, type_of(type), *source, *tag, comm_of(comm), r);
  });
}
void mpi_start_(Fint* request, Fint* ierror) {
  Requests r(1, request, nullptr);
  put(ierror, r.done(MPI_Start(r.c()), 0));
}
void mpi_startall_(const Fint* count, Fint* requests, Fint* ierror) {
  Requests r(*count, requests, nullptr);
  put(ierror, r.done(MPI_Startall(*count, r.c()), 0));
}
void mpi_cancel_(const Fint* request, Fint* ierror) {
  MPI_Request r = MPI_Request_f2c(*request);
  put(ierror, MPI_Cancel(&r));
}
void mpi_request_get_status_(const Fint* request, Fint* flag, Fint* status, Fint* ierror) {
  Status s(status);
  int f = 0;
  put(ierror, s.done(MPI_Request_get_status(MPI_Request_f2c(*request), &f, s.c())));
  *flag = f;
}

void mpi_wait_(Fint* request, Fint* status, Fint* ierror) {
  Requests r(1, request, nullptr);
  Status s(status);
  put(ierror, r.done(s.done(MPI_Wait(r.c(), s.c())), 0));
}
void mpi_probe_(const Fint* source, const Fint* tag, const Fint* comm, Fint* status, Fint* ierror) {
  Status s(status);
  put(ierror, s.done(MPI_Probe(*source, *tag, comm_of(comm), s.c())));
}
void mpi_iprobe_(const Fint* source, const Fint* tag, const Fint* comm, Fint* flag, Fint* status,
                 Fint* ierror) {
  Status s(status);
  int f = 0;
  put(ierror, s.done(MPI_Iprobe(*source, *tag, comm_of(comm), &f, s.c())));
  *flag = f;
}
void mpi_mprobe_(const Fint* source, const Fint* tag, const Fint* comm, Fint* message, Fint* status,
                 Fint* ierror) {
  Status s(status);
  MPI_Message m = MPI_MESSAGE_NULL;
  put(ierror, s.done(MPI_Mprobe(*source, *tag, comm_of(comm), &m, s.c())));
  *message = MPI_Message_c2f(m);
}
void mpi_improbe_(const Fint* source, const Fint* tag, const Fint* comm, Fint* flag, Fint* message,
                  Fint* status, Fint* ierror) {
  Status s(status);
  MPI_Message m = MPI_MESSAGE_NULL;
  int f = 0;
  put(ierror, s.done(MPI_Improbe(*source, *tag, comm_of(comm), &f, &m, s.c())));
  *flag = f;
  if (f != 0) *message = MPI_Message_c2f(m);
}
void mpi_mrecv_(void* buf, const Fint* count, const Fint* type, Fint* message, Fint* status,
                Fint* ierror) {
  Status s(status);
  MPI_Message m = MPI_Message_f2c(*message);
  put(ierror, s.done(MPI_Mrecv(c_buffer(buf), *count, type_of(type), &m, s.c())));
  *message = MPI_Message_c2f(m);
}
void mpi_imrecv_(void* buf, const Fint* count, const Fint* type, Fint* message, Fint* request,
                 Fint* ierror) {
  MPI_Message m = MPI_Message_f2c(*message);
  started(request, ierror,
          [&](MPI_Request* r) { return MPI_Imrecv(c_buffer(buf), *count, type_of(type), &m, r); });
  *message = MPI_Message_c2f(m);
}
void mpi_test_(Fint* request, Fint* flag, Fint* status, Fint* ierror) {
  Requests r(1, request, nullptr);
  Status s(status);
  int f = 0;
  put(ierror, r.done(s.done(MPI_Test(r.c(), &f, s.c())), 0));
  *flag = f;
}
void mpi_waitall_(const Fint* count, Fint* requests, Fint* statuses, Fint* ierror) {
  Requests r(*count, requests, statuses);
  put(ierror, r.done(MPI_Waitall(*count, r.c(), r.statuses()), *count));
}
void mpi_testall_(const Fint* count, Fint* requests, Fint* flag, Fint* statuses, Fint* ierror) {
  Requests r(*count, requests, statuses);
  int f = 0;
  const int rc = MPI_Testall(*count, r.c(), &f, r.statuses());
  put(ierror, r.done(rc, f ? *count : 0));
  *flag = f;
}
void mpi_waitany_(const Fint* count, Fint* requests, Fint* index, Fint* status, Fint* ierror) {
  Requests r(*count, requests, nullptr);
  Status s(status);
  int i = MPI_UNDEFINED;
  put(ierror, r.done(s.done(MPI_Waitany(*count, r.c(), &i, s.c())), 0));
  *index = fortran_index(i);
}
void mpi_testany_(const Fint* count, Fint* requests, Fint* index, Fint* flag, Fint* status,
                  Fint* ierror) {
  Requests r(*count, requests, nullptr);
  Status s(status);
  int i = MPI_UNDEFINED, f = 0;
  put(ierror, r.done(s.done(MPI_Testany(*count, r.c(), &i, &f, s.c())), 0));
  *index = fortran_index(i);
  *flag = f;
}
void mpi_waitsome_(const Fint* incount, Fint* requests, Fint* outcount, Fint* indices,
                   Fint* statuses, Fint* ierror) {
  Requests r(*incount, requests, statuses);
  std::vector<int> which(size_t(std::max(*incount, 0)) + 1);
  int out = 0;
  const int rc = MPI_Waitsome(*incount, r.c(), &out, which.data(), r.statuses());
  const int done = out == MPI_UNDEFINED ? 0 : out;
  put(ierror, r.done(rc, done));
  for (int k = 0; k < done; ++k) indices[k] = which[size_t(k)] + 1;
  *outcount = out;
}
void mpi_testsome_(const Fint* incount, Fint* requests, Fint* outcount, Fint* indices,
                   Fint* statuses, Fint* ierror) {
  Requests r(*incount, requests, statuses);
  std::vector<int> which(size_t(std::max(*incount, 0)) + 1);
  int out = 0;
  const int rc = MPI_Testsome(*incount, r.c(), &out, which.data(), r.statuses());
  const int done = out == MPI_UNDEFINED ? 0 : out;
  put(ierror, r.done(rc, done));
  for (int k = 0; k < done; ++k) indices[k] = which[size_t(k)] + 1;
  *outcount = out;
}
void mpi_request_free_(Fint* request, Fint* ierror) {
  Requests r(1, request, nullptr);
  put(ierror, r.done(MPI_Request_free(r.c()), 0));
}

}  // HYCC_MPIF_BEGIN

#if !defined(OPEN_MPI)
using namespace mpif_h;  // NOLINT(google-build-using-namespace): the f08 functions call them
#endif

extern "C" {

// ---- `use mpi_f08`: handles are one-integer derived types (passed as the address of the
// integer), ierror is optional -------------------------------------------------------------------

void mpi_send_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                   const Fint* tag, const Fint* comm, Fint* ierror) {
  mpi_send_(buf, count, type, dest, tag, comm, ierror);
}
void mpi_ssend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                    const Fint* tag, const Fint* comm, Fint* ierror) {
  mpi_ssend_(buf, count, type, dest, tag, comm, ierror);
}
void mpi_bsend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                    const Fint* tag, const Fint* comm, Fint* ierror) {
  mpi_bsend_(buf, count, type, dest, tag, comm, ierror);
}
void mpi_rsend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                    const Fint* tag, const Fint* comm, Fint* ierror) {
  mpi_rsend_(buf, count, type, dest, tag, comm, ierror);
}
void mpi_recv_f08_(void* buf, const Fint* count, const Fint* type, const Fint* source,
                   const Fint* tag, const Fint* comm, Fint* status, Fint* ierror) {
  mpi_recv_(buf, count, type, source, tag, comm, status, ierror);
}
void mpi_sendrecv_f08_(const void* sendbuf, const Fint* sendcount, const Fint* sendtype,
                       const Fint* dest, const Fint* sendtag, void* recvbuf, const Fint* recvcount,
                       const Fint* recvtype, const Fint* source, const Fint* recvtag,
                       const Fint* comm, Fint* status, Fint* ierror) {
  mpi_sendrecv_(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                recvtag, comm, status, ierror);
}
void mpi_sendrecv_replace_f08_(void* buf, const Fint* count, const Fint* type, const Fint* dest,
                               const Fint* sendtag, const Fint* source, const Fint* recvtag,
                               const Fint* comm, Fint* status, Fint* ierror) {
  mpi_sendrecv_replace_(buf, count, type, dest, sendtag, source, recvtag, comm, status, ierror);
}
void mpi_isend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                    const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_isend_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_issend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                     const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_issend_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_ibsend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                     const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_ibsend_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_irsend_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                     const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_irsend_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_irecv_f08_(void* buf, const Fint* count, const Fint* type, const Fint* source,
                    const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_irecv_(buf, count, type, source, tag, comm, request, ierror);
}
void mpi_probe_f08_(const Fint* source, const Fint* tag, const Fint* comm, Fint* status,
                    Fint* ierror) {
  mpi_probe_(source, tag, comm, status, ierror);
}
void mpi_iprobe_f08_(const Fint* source, const Fint* tag, const Fint* comm, Fint* flag,
                     Fint* status, Fint* ierror) {
  mpi_iprobe_(source, tag, comm, flag, status, ierror);
}
void mpi_mprobe_f08_(const Fint* source, const Fint* tag, const Fint* comm, Fint* message,
                     Fint* status, Fint* ierror) {
  mpi_mprobe_(source, tag, comm, message, status, ierror);
}
void mpi_improbe_f08_(const Fint* source, const Fint* tag, const Fint* comm, Fint* flag,
                      Fint* message, Fint* status, Fint* ierror) {
  mpi_improbe_(source, tag, comm, flag, message, status, ierror);
}
void mpi_mrecv_f08_(void* buf, const Fint* count, const Fint* type, Fint* message, Fint* status,
                    Fint* ierror) {
  mpi_mrecv_(buf, count, type, message, status, ierror);
}
void mpi_imrecv_f08_(void* buf, const Fint* count, const Fint* type, Fint* message, Fint* request,
                     Fint* ierror) {
  mpi_imrecv_(buf, count, type, message, request, ierror);
}
void mpi_wait_f08_(Fint* request, Fint* status, Fint* ierror) {
  mpi_wait_(request, status, ierror);
}
void mpi_test_f08_(Fint* request, Fint* flag, Fint* status, Fint* ierror) {
  mpi_test_(request, flag, status, ierror);
}
void mpi_waitall_f08_(const Fint* count, Fint* requests, Fint* statuses, Fint* ierror) {
  mpi_waitall_(count, requests, statuses, ierror);
}
void mpi_testall_f08_(const Fint* count, Fint* requests, Fint* flag, Fint* statuses, Fint* ierror) {
  mpi_testall_(count, requests, flag, statuses, ierror);
}
void mpi_waitany_f08_(const Fint* count, Fint* requests, Fint* index, Fint* status, Fint* ierror) {
  mpi_waitany_(count, requests, index, status, ierror);
}
void mpi_testany_f08_(const Fint* count, Fint* requests, Fint* index, Fint* flag, Fint* status,
                      Fint* ierror) {
  mpi_testany_(count, requests, index, flag, status, ierror);
}
void mpi_waitsome_f08_(const Fint* incount, Fint* requests, Fint* outcount, Fint* indices,
                       Fint* statuses, Fint* ierror) {
  mpi_waitsome_(incount, requests, outcount, indices, statuses, ierror);
}
void mpi_testsome_f08_(const Fint* incount, Fint* requests, Fint* outcount, Fint* indices,
                       Fint* statuses, Fint* ierror) {
  mpi_testsome_(incount, requests, outcount, indices, statuses, ierror);
}
void mpi_request_free_f08_(Fint* request, Fint* ierror) { mpi_request_free_(request, ierror); }
void mpi_send_init_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                        const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_send_init_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_ssend_init_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                         const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_ssend_init_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_bsend_init_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                         const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_bsend_init_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_rsend_init_f08_(const void* buf, const Fint* count, const Fint* type, const Fint* dest,
                         const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_rsend_init_(buf, count, type, dest, tag, comm, request, ierror);
}
void mpi_recv_init_f08_(void* buf, const Fint* count, const Fint* type, const Fint* source,
                        const Fint* tag, const Fint* comm, Fint* request, Fint* ierror) {
  mpi_recv_init_(buf, count, type, source, tag, comm, request, ierror);
}
void mpi_start_f08_(Fint* request, Fint* ierror) { mpi_start_(request, ierror); }
void mpi_startall_f08_(const Fint* count, Fint* requests, Fint* ierror) {
  mpi_startall_(count, requests, ierror);
}
void mpi_cancel_f08_(const Fint* request, Fint* ierror) { mpi_cancel_(request, ierror); }
void mpi_request_get_status_f08_(const Fint* request, Fint* flag, Fint* status, Fint* ierror) {
  mpi_request_get_status_(request, flag, status, ierror);
}

}  // extern "C"
