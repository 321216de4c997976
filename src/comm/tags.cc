#include "comm/tags.h"

#include <climits>

#include "comm/group.h"
#include "hycc/error.h"

namespace hycc::comm {
namespace {

int64_t mpi_tag_upper_bound(MPI_Comm comm) {
  void* attr = nullptr;
  int flag = 0;
  HYCC_CHECK_MPI(MPI_Comm_get_attr(comm, MPI_TAG_UB, &attr, &flag));
  return flag ? *static_cast<int*>(attr) : 32767;  // 32767: the least MPI guarantees
}

int64_t tag_upper_bound(const Communicator& comm) {
  if (const Group* g = comm.group()) return g->tag_upper_bound();
  return mpi_tag_upper_bound(comm.mpi());
}

// Largest user tag: base + 8 * tag + 7 must stay <= the upper bound.
int64_t max_user_tag_below(int64_t ub) { return (ub - (ub / 2 + 1) - 7) / 8; }

int tag_in_slot(int64_t ub, int user_tag, int64_t slot) {
  const int64_t most = max_user_tag_below(ub);
  if (user_tag < 0 || user_tag > most) {
    throw InvalidArgument(tagged("coll", "tag ", user_tag, " out of range [0, ", most,
                                 "] (hycc uses the upper half of the tag space, up to ", ub, ")"));
  }
  return static_cast<int>(ub / 2 + 1 + 8 * int64_t{user_tag} + slot);
}

}  // namespace

int64_t max_user_tag(const Communicator& comm) { return max_user_tag_below(tag_upper_bound(comm)); }

int internal_tag(const Communicator& comm, int user_tag, Operation op) {
  return tag_in_slot(tag_upper_bound(comm), user_tag, static_cast<int64_t>(op) + 1);
}

int device_p2p_tag(const Communicator& comm, int user_tag) {
  return tag_in_slot(tag_upper_bound(comm), user_tag, 7);
}

int reserved_tag(MPI_Comm comm) { return static_cast<int>(mpi_tag_upper_bound(comm) / 2 + 1); }
int reserved_tag(const Communicator& comm) {
  return static_cast<int>(tag_upper_bound(comm) / 2 + 1);
}

int mpi_count(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(tagged("coll", what, ": ", n, " exceeds the MPI count limit ", INT_MAX));
  }
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DType dtype) { return dtype == DType::kF32 ? MPI_FLOAT : MPI_UINT16_T; }

}  // namespace hycc::comm
