#include "comm/tags.h"

#include <climits>

#include "hycc/error.h"

namespace hycc::comm {
namespace {

int64_t tag_upper_bound(MPI_Comm comm) {
  void* attr = nullptr;
  int flag = 0;
  HYCC_CHECK_MPI(MPI_Comm_get_attr(comm, MPI_TAG_UB, &attr, &flag));
  return flag ? *static_cast<int*>(attr) : 32767;  // 32767: the least MPI guarantees
}

}  // namespace

// Largest user tag: base + 8 * tag + 7 must stay <= MPI_TAG_UB.
int64_t max_user_tag(MPI_Comm comm) {
  const int64_t ub = tag_upper_bound(comm);
  return (ub - (ub / 2 + 1) - 7) / 8;
}

namespace {

int tag_in_slot(MPI_Comm comm, int user_tag, int64_t slot) {
  const int64_t ub = tag_upper_bound(comm);
  if (user_tag < 0 || user_tag > max_user_tag(comm)) {
    throw InvalidArgument(tagged("coll", "tag ", user_tag, " out of range [0, ", max_user_tag(comm),
                                 "] (hycc uses the upper half of MPI_TAG_UB ", ub, ")"));
  }
  return static_cast<int>(ub / 2 + 1 + 8 * int64_t{user_tag} + slot);
}

}  // namespace

int internal_tag(MPI_Comm comm, int user_tag, Operation op) {
  return tag_in_slot(comm, user_tag, static_cast<int64_t>(op) + 1);
}

int device_p2p_tag(MPI_Comm comm, int user_tag) { return tag_in_slot(comm, user_tag, 7); }

int reserved_tag(MPI_Comm comm) { return static_cast<int>(tag_upper_bound(comm) / 2 + 1); }

int mpi_count(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(tagged("coll", what, ": ", n, " exceeds the MPI count limit ", INT_MAX));
  }
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DType dtype) { return dtype == DType::kF32 ? MPI_FLOAT : MPI_UINT16_T; }

}  // namespace hycc::comm
