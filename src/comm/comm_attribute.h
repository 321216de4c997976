// An object of type T kept with an MPI communicator as an attribute: created (value-initialized)
// on first use, deleted when the communicator is freed, not copied by MPI_Comm_dup. One keyval
// per T. Not locked: callers serialize access to one communicator.
#pragma once

#include <mpi.h>

#include "comm/group.h"
#include "hycc/comm.h"

namespace hycc {

template <typename T>
T& comm_attribute(MPI_Comm comm) {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_delete_attr_function* const destroy = [](MPI_Comm, int, void* value, void*) {
      delete static_cast<T*>(value);
      return MPI_SUCCESS;
    };
    HYCC_CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, destroy, &k, nullptr));
    return k;
  }();
  void* value = nullptr;
  int found = 0;
  HYCC_CHECK_MPI(MPI_Comm_get_attr(comm, keyval, &value, &found));
  if (found == 0) {
    value = new T{};
    HYCC_CHECK_MPI(MPI_Comm_set_attr(comm, keyval, value));
  }
  return *static_cast<T*>(value);
}

// The same on any communicator: with the group of one that is not MPI's.
template <typename T>
T& comm_attribute(const Communicator& comm) {
  if (comm::Group* g = comm.group()) return g->attribute<T>();
  return comm_attribute<T>(comm.mpi());
}

}  // namespace hycc
