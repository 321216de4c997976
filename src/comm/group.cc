#include "comm/group.h"

#include <mpi.h>

#include <climits>

#include "hycc/error.h"

namespace hycc::comm {
namespace {

MPI_Op mpi_op(Combine how) {
  switch (how) {
    case Combine::kMin:
      return MPI_MIN;
    case Combine::kMax:
      return MPI_MAX;
    case Combine::kSum:
      return MPI_SUM;
  }
  return MPI_SUM;
}

int small_count(size_t n) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(tagged("comm", "combine: ", n, " values exceed INT_MAX"));
  }
  return static_cast<int>(n);
}

}  // namespace

void combine(const Communicator& comm, std::span<int64_t> values, Combine how) {
  if (Group* g = comm.group()) return g->combine(values, how);
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values.data(), small_count(values.size()), MPI_INT64_T,
                               mpi_op(how), comm.mpi()));
}

void combine(const Communicator& comm, std::span<double> values, Combine how) {
  if (Group* g = comm.group()) return g->combine(values, how);
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values.data(), small_count(values.size()), MPI_DOUBLE,
                               mpi_op(how), comm.mpi()));
}

void barrier(const Communicator& comm) {
  if (Group* g = comm.group()) return g->barrier();
  HYCC_CHECK_MPI(MPI_Barrier(comm.mpi()));
}

std::unique_ptr<Transport> host_transport(const Communicator& comm, DeviceOps& host, int tag) {
  if (Group* g = comm.group()) return g->host_transport(host, tag);
  return make_mpi_transport(host, comm.mpi(), tag);
}

}  // namespace hycc::comm
