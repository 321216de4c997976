// Vector variants of libhycc_mpi.so: MPI_Reduce_scatter (MPI_SUM) and MPI_Allgatherv on
// contiguous float data go through hycc with the process's policy when the ranks' counts differ
// by at most one element: equal blocks, or a balanced split of a tensor (numpy.array_split's,
// hycc's chunk_range). Other counts go to MPI untouched (padding them to the longest block would
// send more than MPI does).
//
// hycc's reduce_scatter gives each rank its chunk_range chunk and its allgather takes equal
// blocks, so:
//  - MPI_Reduce_scatter whose counts are the chunk_range layout (the longer chunks first) is
//    hycc::reduce_scatter of the whole input; other counts are padded, each chunk to the longest
//    by repeating its last value, and reduce-scattered in equal chunks (the padding is dropped);
//  - MPI_Allgatherv of equal, adjacent blocks is hycc::allgather into the receive buffer; other
//    counts or displacements are padded to the longest block, gathered into a scratch buffer and
//    placed at the program's displacements (what lies between them is left as it was).
// Every rank decides from the counts alone, which MPI requires to be the same on every rank, so
// all ranks take the same path. Device buffers take the device route (device_route.h) in the
// chunk_range layout and are staged otherwise, as for the other collectives. The
// nonblocking forms (MPI_Ireduce_scatter, MPI_Iallgatherv) are in mpi/nonblocking_collectives.cc.
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "common/buffer_pool.h"
#include "hycc/collectives.h"
#include "hycc/device.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/device_route.h"
#include "interpose/runtime/routing.h"

namespace hycc::interpose {
namespace {

// True when counts are chunk_range's chunks of their total, in rank order.
bool chunk_range_layout(const Counts& c) {
  const int size = int(c.n.size());
  for (int r = 0; r < size; ++r) {
    if (chunk_range(c.total, size, r).count != c.n[size_t(r)]) return false;
  }
  return true;
}

void reduce_scatter_counts(CommState& st, const PolicyDecision& d, const void* sendbuf,
                           void* recvbuf, const Counts& c) {
  const size_t size = c.n.size();
  const size_t mine = c.n[size_t(st.comm.rank())];
  if (chunk_range_layout(c)) {
    reduce_scatter_chunk(st, d, sendbuf, recvbuf, c.total,
                         chunk_range(c.total, int(size), st.comm.rank()));
    return;
  }
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  // Each chunk padded to the longest: equal chunks, rank r's at r * longest.
  PooledFloats wide(size * c.longest);
  {
    HostStaging send(input, c.total * sizeof(float));
    pad_chunks(send.floats(), c, wide.data());
  }
  PooledFloats chunk(c.longest);
  reduce_scatter(st.comm, floats(wide.data(), wide.size()), floats(chunk.data(), chunk.size()),
                 ReduceOp::kSum, policy_options(d, input, wide.size()));
  HostStaging recv(recvbuf, mine * sizeof(float), false);
  std::copy_n(chunk.data(), mine, recv.floats());
  recv.store();
}

void allgatherv_counts(CommState& st, const PolicyDecision& d, const void* sendbuf, void* recvbuf,
                       const Counts& c, const int* displs) {
  const size_t size = c.n.size();
  const size_t rank = size_t(st.comm.rank());
  const bool in_place = sendbuf == MPI_IN_PLACE;
  bool adjacent = true;  // equal blocks, block r at r * longest: the buffer is allgather's
  for (size_t r = 0; r < size; ++r) {
    adjacent = adjacent && c.n[r] == c.longest && ptrdiff_t(displs[r]) == ptrdiff_t(r * c.longest);
  }
  const Extent extent = extent_of(c, displs);
  // The blocks are written, the rest kept: a staged device buffer is loaded first unless the
  // blocks cover all of it.
  HostStaging recv(static_cast<float*>(recvbuf) + extent.lo, extent.floats() * sizeof(float),
                   !adjacent || in_place);
  float* at = recv.floats() - extent.lo;  // recvbuf as the host sees it
  const float* own = at + displs[rank];
  if (adjacent) {
    HostStaging send(in_place ? own : sendbuf, c.longest * sizeof(float));
    allgather(st.comm, floats(send.data(), c.longest), floats(at, c.total), policy_options(d));
  } else {
    PooledFloats block(c.longest);
    {
      HostStaging send(in_place ? own : sendbuf, c.n[rank] * sizeof(float));
      pad_block(send.floats(), c.n[rank], block.data(), c.longest);
    }
    PooledFloats all(size * c.longest);
    allgather(st.comm, floats(block.data(), block.size()), floats(all.data(), all.size()),
              policy_options(d));
    for (size_t r = 0; r < size; ++r) {
      std::copy_n(all.data() + r * c.longest, c.n[r], at + displs[r]);
    }
  }
  recv.store();
}

}  // namespace

void reduce_scatter_chunk(CommState& st, const PolicyDecision& d, const void* sendbuf,
                          void* recvbuf, size_t total, ChunkRange mine) {
  // In place, the input is all of recvbuf and the result goes to its first mine.count elements;
  // native MPI leaves the rest of recvbuf as it was, so hycc's result goes to a scratch chunk
  // first (hycc's own in-place form would write it into this rank's chunk of the input).
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const void* input = in_place ? recvbuf : sendbuf;
  if (const DeviceRoute gpu(st, {in_place ? nullptr : sendbuf, recvbuf}); gpu) {
    DeviceBuffer scratch(in_place ? mine.count * sizeof(float) : 0);
    void* out = in_place ? scratch.data() : recvbuf;
    reduce_scatter_device(st.comm, floats(const_cast<void*>(input), total), floats(out, mine.count),
                          ReduceOp::kSum, gpu.options(d, input, total));
    if (in_place && mine.count != 0) {
      copy_on_device(recvbuf, out, mine.count * sizeof(float));
      synchronize_stream(nullptr);
    }
    return;
  }
  HostStaging send(input, total * sizeof(float));
  PooledFloats scratch(in_place ? mine.count : 0);
  HostStaging recv(recvbuf, mine.count * sizeof(float), false);
  float* out = in_place ? scratch.data() : recv.floats();
  reduce_scatter(st.comm, floats(send.data(), total), floats(out, mine.count), ReduceOp::kSum,
                 policy_options(d, input, total));
  if (in_place) std::copy_n(out, mine.count, recv.floats());
  recv.store();
}

}  // namespace hycc::interpose

using hycc::Operation;
using hycc::interpose::CommState;
namespace ip = hycc::interpose;

extern "C" {

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  ip::Counts c;
  CommState* s = ip::route_reduce_scatter(comm, recvcounts, datatype, op, &c);
  return ip::intercept(
      s, comm, Operation::kReduceScatter, c.total, "MPI_Reduce_scatter",
      [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm); },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        ip::reduce_scatter_counts(st, d, sendbuf, recvbuf, c);
      });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  ip::Counts c;
  CommState* s =
      ip::route_allgatherv(comm, sendbuf, sendcount, sendtype, recvcounts, displs, recvtype, &c);
  return ip::intercept(
      s, comm, Operation::kAllgather, c.total, "MPI_Allgatherv",
      [&] {
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               comm);
      },
      [&](CommState& st, const hycc::PolicyDecision& d) {
        ip::allgatherv_counts(st, d, sendbuf, recvbuf, c, displs);
      });
}

}  // extern "C"
