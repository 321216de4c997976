// Fortran bindings of libhycc_mpi.so. Open MPI's Fortran library calls the PMPI_ entry points
// itself, so a Fortran program would pass by the C wrappers: these define the symbols Fortran
// calls and hand each call to the library's C entry point, with the Fortran handles converted, so
// routing, policy, statistics and the fallback to MPI are those of C programs.
//
// - mpif.h and `use mpi` (mpi_xxx_, the gfortran / Intel / flang naming): the lifecycle, the
//   communicators the application makes and names, the seven collectives, and point-to-point
//   (blocking, nonblocking, persistent, the probes and the completions), so that every message a
//   Fortran program sends and receives goes the same way.
// - `use mpi_f08` (mpi_xxx_f08_): the same calls. Its handles are one-integer derived types, and
//   in Open MPI its TYPE(MPI_Status) has the layout of the C status (and of mpif.h's
//   MPI_STATUS_SIZE integers: Open MPI's own mpi_f08 hands it to its mpif.h functions), so each
//   f08 call is the mpif.h one.
// Fortran's MPI_IN_PLACE and MPI_BOTTOM are addresses in Open MPI (mpi_fortran_in_place_,
// mpi_fortran_bottom_); MPI_STATUS(ES)_IGNORE are MPI_F_STATUS(ES)_IGNORE.
//
// MPICH (and the MPIs built on it) differs: its mpif.h and `use mpi` functions call the C MPI_
// functions, so the C wrappers already see those calls, and definitions of ours would take the
// place of MPICH's and read its Fortran MPI_IN_PLACE (another address) as a buffer; so with any
// MPI but Open MPI the mpif.h functions below are internal, not exported. Its `use mpi_f08`
// functions with buffers (mpi_xxx_f08ts_) call the C MPI_ functions too, but those without
// (MPI_Init, the communicator calls, the completions) call PMPI_ directly: the library would
// never start, nor name communicators, nor decode nonblocking results. So the f08 functions
// below are exported with every MPI (their handles and statuses have the C layout in MPICH too).
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

using Fint = MPI_Fint;

// Integers of a Fortran status (MPI_STATUS_SIZE): MPI_Status_c2f copies the C status as is.
constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(Fint);
static_assert(sizeof(MPI_Status) % sizeof(Fint) == 0);

struct FortranAddresses {
  const void* in_place = dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
  const void* bottom = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
};

const FortranAddresses& addresses() {
  static const FortranAddresses a;
  return a;
}

// A Fortran buffer argument as C sees it.
const void* c_buffer(const void* f) {
  if (f != nullptr && f == addresses().in_place) return MPI_IN_PLACE;
  if (f != nullptr && f == addresses().bottom) return MPI_BOTTOM;
  return f;
}
void* c_buffer(void* f) { return const_cast<void*>(c_buffer(static_cast<const void*>(f))); }

// The return code into ierror (optional under mpi_f08: a null pointer when absent).
void put(Fint* ierror, int rc) {
  if (ierror != nullptr) *ierror = rc;
}

MPI_Comm comm_of(const Fint* f) { return MPI_Comm_f2c(*f); }
MPI_Datatype type_of(const Fint* f) { return MPI_Type_f2c(*f); }

// A Fortran status argument for one call: MPI_STATUS_IGNORE, or MPI_STATUS_SIZE integers set
// from the C status afterwards.
class Status {
 public:
  explicit Status(Fint* f) : f_(f) {}
  MPI_Status* c() { return ignored() ? MPI_STATUS_IGNORE : &c_; }
  int done(int rc) {
    if (!ignored()) MPI_Status_c2f(&c_, f_);
    return rc;
  }

 private:
  bool ignored() const { return f_ == nullptr || f_ == MPI_F_STATUS_IGNORE; }
  Fint* f_;
  MPI_Status c_{};
};

// A Fortran array of requests (and of statuses) for one completion call: converted to C before,
// and back after (completed requests become MPI_REQUEST_NULL).
class Requests {
 public:
  Requests(int n, Fint* requests, Fint* statuses)
      : n_(std::max(n, 0)), f_(requests), fs_(statuses), c_(size_t(n_)), cs_(size_t(n_)) {
    for (int i = 0; i < n_; ++i) c_[size_t(i)] = MPI_Request_f2c(f_[i]);
  }
  MPI_Request* c() { return c_.data(); }
  MPI_Status* statuses() { return ignored() ? MPI_STATUSES_IGNORE : cs_.data(); }
  // Requests back to Fortran, and the first `count` statuses (waitall and testall: all of
  // them; waitsome and testsome: one per completed request, in the order of the indices).
  int done(int rc, int count) {
    for (int i = 0; i < n_; ++i) f_[i] = MPI_Request_c2f(c_[size_t(i)]);
    if (!ignored()) {
      for (int k = 0; k < count; ++k)
        MPI_Status_c2f(&cs_[size_t(k)], fs_ + size_t(k) * kStatusInts);
    }
    return rc;
  }

 private:
  bool ignored() const { return fs_ == nullptr || fs_ == MPI_F_STATUSES_IGNORE; }
  int n_;
  Fint* f_;
  Fint* fs_;
  std::vector<MPI_Request> c_;
  std::vector<MPI_Status> cs_;
};

// A Fortran string argument (its hidden length, trailing blanks dropped).
std::string fortran_string(const char* s, size_t length) {
  std::string out(s, length);
  out.erase(out.find_last_not_of(' ') + 1);
  return out;
}

// Fortran indices count from 1.
int fortran_index(int c) { return c == MPI_UNDEFINED ? c : c + 1; }

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

// A nonblocking call: the C call with a C request, which the Fortran one receives.
template <typename Call>
void started(Fint* request, Fint* ierror, Call&& call) {
  MPI_Request r = MPI_REQUEST_NULL;
  put(ierror, call(&r));
  *request = MPI_Request_c2f(r);
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

// The mpif.h functions: exported for Open MPI, internal otherwise (above).
#if defined(OPEN_MPI)
#define HYCC_MPIF_BEGIN extern "C" {
#else
#define HYCC_MPIF_BEGIN namespace mpif_h {
#endif

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
