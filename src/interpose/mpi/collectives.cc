// Collectives of libhycc_mpi.so: MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,
// MPI_Bcast and MPI_Alltoall on contiguous MPI_FLOAT (or Fortran MPI_REAL) data (with MPI_SUM for
// the reductions) go through hycc with the process's policy; every other call goes to the MPI
// library untouched. Device buffers of CUDA-aware programs take hycc's device collectives when
// every rank has them (device_route.h), and are staged through host memory otherwise
// (device_memory.h).
#include <mpi.h>

#include "hycc/collectives.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/device_route.h"
#include "interpose/runtime/routing.h"

using hycc::Operation;
using hycc::interpose::CommState;
namespace ip = hycc::interpose;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  CommState* s = op == MPI_SUM && count >= 0 ? ip::route(comm, datatype) : nullptr;
  const size_t n = size_t(count);
  return ip::intercept(
      s, comm, Operation::kAllreduce, n, "MPI_Allreduce",
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        const bool in_place = sendbuf == MPI_IN_PLACE;
        const void* input = in_place ? recvbuf : sendbuf;
        if (const ip::DeviceRoute gpu(st, {input, recvbuf}); gpu) {
          return hycc::allreduce_device(st.comm, ip::floats(const_cast<void*>(input), n),
                                        ip::floats(recvbuf, n), hycc::ReduceOp::kSum,
                                        gpu.options(d, recvbuf, n));
        }
        ip::HostStaging recv(recvbuf, n * sizeof(float), in_place);
        ip::HostStaging send(in_place ? recv.data() : sendbuf, n * sizeof(float));
        hycc::allreduce(st.comm, ip::floats(send.data(), n), ip::floats(recv.data(), n),
                        hycc::ReduceOp::kSum, ip::policy_options(d, recvbuf, n));
        recv.store();
      });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  CommState* s = op == MPI_SUM && recvcount >= 0 ? ip::route(comm, datatype) : nullptr;
  const size_t n = size_t(recvcount);
  return ip::intercept(
      s, comm, Operation::kReduceScatter, s == nullptr ? 0 : n * ip::comm_size(comm),
      "MPI_Reduce_scatter_block",
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm); },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        const size_t size = size_t(st.comm.size());
        ip::reduce_scatter_chunk(st, d, sendbuf, recvbuf, n * size,
                                 {n * size_t(st.comm.rank()), n});
      });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  CommState* s = ip::route_blocks(comm, sendbuf, sendcount, sendtype, recvcount, recvtype);
  const size_t n = size_t(recvcount);
  return ip::intercept(
      s, comm, Operation::kAllgather, s == nullptr ? 0 : n * ip::comm_size(comm), "MPI_Allgather",
      [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        const size_t size = size_t(st.comm.size());
        const bool in_place = sendbuf == MPI_IN_PLACE;
        if (const ip::DeviceRoute gpu(st, {in_place ? nullptr : sendbuf, recvbuf}); gpu) {
          float* own = static_cast<float*>(recvbuf) + n * size_t(st.comm.rank());
          return hycc::allgather_device(st.comm,
                                        ip::floats(in_place ? own : const_cast<void*>(sendbuf), n),
                                        ip::floats(recvbuf, n * size), gpu.options(d));
        }
        ip::HostStaging recv(recvbuf, n * size * sizeof(float), in_place);
        float* all = recv.floats();
        ip::HostStaging send(in_place ? all + n * size_t(st.comm.rank()) : sendbuf,
                             n * sizeof(float));
        hycc::allgather(st.comm, ip::floats(send.data(), n), ip::floats(all, n * size),
                        ip::policy_options(d));
        recv.store();
      });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  CommState* s = ip::route_bcast(comm, count, datatype, root);
  return ip::intercept(
      s, comm, Operation::kBroadcast, size_t(count), "MPI_Bcast",
      [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        if (const ip::DeviceRoute gpu(st, {buffer}); gpu) {
          return hycc::broadcast_device(st.comm, ip::floats(buffer, size_t(count)), root,
                                        gpu.options(d));
        }
        ip::HostStaging data(buffer, size_t(count) * sizeof(float), st.comm.rank() == root);
        hycc::broadcast(st.comm, ip::floats(data.data(), size_t(count)), root,
                        ip::policy_options(d));
        data.store();
      });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  CommState* s = ip::route_blocks(comm, sendbuf, sendcount, sendtype, recvcount, recvtype);
  const size_t total = s == nullptr ? 0 : size_t(recvcount) * ip::comm_size(comm);
  return ip::intercept(
      s, comm, Operation::kAlltoall, total, "MPI_Alltoall",
      [&] {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        const bool in_place = sendbuf == MPI_IN_PLACE;
        const void* input = in_place ? recvbuf : sendbuf;
        if (const ip::DeviceRoute gpu(st, {input, recvbuf}); gpu) {
          return hycc::alltoall_device(st.comm, ip::floats(const_cast<void*>(input), total),
                                       ip::floats(recvbuf, total), gpu.options(d));
        }
        ip::HostStaging recv(recvbuf, total * sizeof(float), in_place);
        ip::HostStaging send(in_place ? recv.data() : sendbuf, total * sizeof(float));
        hycc::alltoall(st.comm, ip::floats(send.data(), total), ip::floats(recv.data(), total),
                       ip::policy_options(d));
        recv.store();
      });
}

}  // extern "C"
