// A Communicator: a group of ranks over an MPI communicator, with a name ("dp", "tp", "pp", ...)
// that the policy layer uses to choose codecs. Cheap to copy (shared state).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "hycc/error.h"

namespace hycc {

namespace comm {
class Group;  // the ranks of a communicator that is not MPI's (src/comm/group.h)
}

class Communicator {
 public:
  // MPI_COMM_WORLD, not owned. MPI must be initialized.
  static Communicator world();
  // Wraps `comm` without owning it: the caller frees it after the last Communicator is gone.
  static Communicator wrap(MPI_Comm comm, std::string name = "");
  // Takes ownership of `comm`: MPI_Comm_free runs when the last copy goes (if MPI is still up).
  // A non-empty name is also set on `comm` (MPI_Comm_set_name), as for dup and split.
  static Communicator adopt(MPI_Comm comm, std::string name = "");

  // A duplicate with its own communication context (owned): hycc's messages never match the
  // application's, even with equal tags.
  Communicator dup(std::string name = "") const;
  // MPI_Comm_split: ranks with equal `color` form a group, ordered by `key`. Collective.
  Communicator split(int color, int key, std::string name = "") const;

  // A communicator over the ranks of `group`, a group that is not MPI's (a torch process group:
  // docs/torch.md). dup and split are MPI's only.
  static Communicator over(std::shared_ptr<comm::Group> group, std::string name = "");

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  // The MPI communicator; throws InvalidArgument on a communicator made by over().
  MPI_Comm mpi() const;
  bool is_mpi() const;
  // The group of a communicator made by over(); null for an MPI one.
  comm::Group* group() const;

 private:
  struct Handle;
  Communicator(std::shared_ptr<Handle> handle, std::string name);

  std::shared_ptr<Handle> handle_;
  int rank_ = 0;
  int size_ = 1;
  std::string name_;
};

// Throws CommError tagged with `component` and MPI's error string if `rc` is not MPI_SUCCESS.
void check_mpi(int rc, const char* what, const char* file, int line);

}  // namespace hycc

#define HYCC_CHECK_MPI(call) ::hycc::check_mpi((call), #call, __FILE__, __LINE__)
