#include "hycc/comm.h"

#include <utility>

#include "comm/group.h"

namespace hycc {

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
  std::shared_ptr<comm::Group> group;  // set instead of comm by over()

  ~Handle() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned && !finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

void check_mpi(int rc, const char* what, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw CommError(tagged("mpi", what, " failed: ", std::string(text, static_cast<size_t>(len)),
                         " (", file, ":", line, ")"));
}

Communicator::Communicator(std::shared_ptr<Handle> handle, std::string name)
    : handle_(std::move(handle)), name_(std::move(name)) {
  if (handle_->group) {
    rank_ = handle_->group->rank();
    size_ = handle_->group->size();
    return;
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw InvalidArgument(tagged("comm", "MPI is not initialized"));
  HYCC_CHECK_MPI(MPI_Comm_rank(handle_->comm, &rank_));
  HYCC_CHECK_MPI(MPI_Comm_size(handle_->comm, &size_));
}

Communicator Communicator::world() { return wrap(MPI_COMM_WORLD, "world"); }

Communicator Communicator::wrap(MPI_Comm comm, std::string name) {
  if (comm == MPI_COMM_NULL) throw InvalidArgument(tagged("comm", "wrap of MPI_COMM_NULL"));
  auto h = std::make_shared<Handle>();
  h->comm = comm;
  return Communicator(std::move(h), std::move(name));
}

Communicator Communicator::adopt(MPI_Comm comm, std::string name) {
  if (comm == MPI_COMM_NULL) throw InvalidArgument(tagged("comm", "adopt of MPI_COMM_NULL"));
  auto h = std::make_shared<Handle>();
  h->comm = comm;
  h->owned = true;
  // An owned communicator also carries its name in MPI, where tools (and the drop-in library's
  // policy) can read it.
  if (!name.empty()) HYCC_CHECK_MPI(MPI_Comm_set_name(comm, name.c_str()));
  return Communicator(std::move(h), std::move(name));
}

Communicator Communicator::over(std::shared_ptr<comm::Group> group, std::string name) {
  if (!group) throw InvalidArgument(tagged("comm", "over: no group"));
  auto h = std::make_shared<Handle>();
  h->group = std::move(group);
  return Communicator(std::move(h), std::move(name));
}

Communicator Communicator::dup(std::string name) const {
  MPI_Comm c = MPI_COMM_NULL;
  HYCC_CHECK_MPI(MPI_Comm_dup(mpi(), &c));
  return adopt(c, name.empty() ? name_ : std::move(name));
}

Communicator Communicator::split(int color, int key, std::string name) const {
  MPI_Comm c = MPI_COMM_NULL;
  HYCC_CHECK_MPI(MPI_Comm_split(mpi(), color, key, &c));
  if (c == MPI_COMM_NULL) {
    throw InvalidArgument(tagged("comm", "split with MPI_UNDEFINED color gives no communicator"));
  }
  return adopt(c, std::move(name));
}

MPI_Comm Communicator::mpi() const {
  if (handle_->group) {
    throw InvalidArgument(tagged("comm", "communicator '", name_, "' is a ",
                                 handle_->group->describe(),
                                 ", not an MPI communicator: this call needs MPI"));
  }
  return handle_->comm;
}

bool Communicator::is_mpi() const { return !handle_->group; }

comm::Group* Communicator::group() const { return handle_->group.get(); }

}  // namespace hycc
