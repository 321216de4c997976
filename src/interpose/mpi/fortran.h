// Shared by the Fortran bindings of libhycc_mpi.so: mpi/fortran.cc (the lifecycle, the
// communicators and the collectives) and interpose_fortran_p2p.cc (point to point, probes,
// persistent requests and the completions). Open MPI's Fortran library calls the PMPI_ entry
// points itself, so a Fortran program would pass by the C wrappers: these files define the
// symbols Fortran calls and hand each call to the library's C entry point, with the Fortran
// handles converted, so routing, policy, statistics and the fallback to MPI are those of C
// programs.
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
// MPI but Open MPI the mpif.h functions of both files are internal, not exported. Its `use mpi_f08`
// functions with buffers (mpi_xxx_f08ts_) call the C MPI_ functions too, but those without
// (MPI_Init, the communicator calls, the completions) call PMPI_ directly: the library would
// never start, nor name communicators, nor decode nonblocking results. So the f08 functions
// are exported with every MPI (their handles and statuses have the C layout in MPICH too).
#pragma once

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace hycc::interpose::fortran {

using Fint = MPI_Fint;

// Integers of a Fortran status (MPI_STATUS_SIZE): MPI_Status_c2f copies the C status as is.
constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(Fint);
static_assert(sizeof(MPI_Status) % sizeof(Fint) == 0);

struct FortranAddresses {
  const void* in_place = dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
  const void* bottom = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
};

inline const FortranAddresses& addresses() {
  static const FortranAddresses a;
  return a;
}

// A Fortran buffer argument as C sees it.
inline const void* c_buffer(const void* f) {
  if (f != nullptr && f == addresses().in_place) return MPI_IN_PLACE;
  if (f != nullptr && f == addresses().bottom) return MPI_BOTTOM;
  return f;
}
inline void* c_buffer(void* f) { return const_cast<void*>(c_buffer(static_cast<const void*>(f))); }

// The return code into ierror (optional under mpi_f08: a null pointer when absent).
inline void put(Fint* ierror, int rc) {
  if (ierror != nullptr) *ierror = rc;
}

inline MPI_Comm comm_of(const Fint* f) { return MPI_Comm_f2c(*f); }
inline MPI_Datatype type_of(const Fint* f) { return MPI_Type_f2c(*f); }

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
inline std::string fortran_string(const char* s, size_t length) {
  std::string out(s, length);
  out.erase(out.find_last_not_of(' ') + 1);
  return out;
}

// Fortran indices count from 1.
inline int fortran_index(int c) { return c == MPI_UNDEFINED ? c : c + 1; }

// A nonblocking call: the C call with a C request, which the Fortran one receives.
template <typename Call>
void started(Fint* request, Fint* ierror, Call&& call) {
  MPI_Request r = MPI_REQUEST_NULL;
  put(ierror, call(&r));
  *request = MPI_Request_c2f(r);
}

}  // namespace hycc::interpose::fortran

// The mpif.h functions: exported for Open MPI, internal otherwise (above).
#if defined(OPEN_MPI)
#define HYCC_MPIF_BEGIN extern "C" {
#else
#define HYCC_MPIF_BEGIN namespace mpif_h {
#endif
