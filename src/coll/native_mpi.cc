// The native path: the MPI collectives, uncompressed, for messages below the threshold (and
// for Algorithm::kNative). MPI has no bf16/f16 type, so 16-bit sums are widened to float32 (exact),
// reduced by MPI in float32 and rounded once; copies of 16-bit data move as MPI_UINT16_T.
// Counts above INT_MAX are an InvalidArgument here (the compressed algorithms have no limit).
// On a communicator that is not MPI's, the group's own collectives run instead (comm/group.h).
#include <vector>

#include "codec/float_io.h"
#include "coll/algorithms.h"
#include "comm/group.h"

namespace hycc::coll {

void allreduce_native(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op) {
  if (ctx.group != nullptr) return ctx.group->allreduce(send, recv, op);
  const int n = mpi_count(send.count, "native allreduce: element count");
  if (send.dtype == DType::kF32) {
    const void* from = send.data == recv.data ? MPI_IN_PLACE : send.data;
    HYCC_CHECK_MPI(MPI_Allreduce(from, recv.data, n, MPI_FLOAT, MPI_SUM, ctx.comm));
    if (op == ReduceOp::kAverage) {
      store_result(static_cast<const float*>(recv.data), send.count, op, ctx.size, recv, 0);
    }
    return;
  }
  std::vector<float> sum(send.count);
  codec::load_as_float(send, 0, send.count, sum.data());
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sum.data(), n, MPI_FLOAT, MPI_SUM, ctx.comm));
  store_result(sum.data(), send.count, op, ctx.size, recv, 0);
}

void reduce_scatter_native(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op) {
  if (ctx.group != nullptr) return ctx.group->reduce_scatter(send, recv, op);
  mpi_count(send.count, "native reduce_scatter: element count");
  std::vector<int> counts(static_cast<size_t>(ctx.size));
  for (int j = 0; j < ctx.size; ++j) {
    counts[static_cast<size_t>(j)] = static_cast<int>(chunk_range(send.count, ctx.size, j).count);
  }
  // MPI forbids aliasing of send and receive buffers: the float32 chunk lands in its own buffer.
  std::vector<float> chunk(recv.count);
  if (send.dtype == DType::kF32) {
    HYCC_CHECK_MPI(
        MPI_Reduce_scatter(send.data, chunk.data(), counts.data(), MPI_FLOAT, MPI_SUM, ctx.comm));
  } else {
    std::vector<float> wide(send.count);
    codec::load_as_float(send, 0, send.count, wide.data());
    HYCC_CHECK_MPI(
        MPI_Reduce_scatter(wide.data(), chunk.data(), counts.data(), MPI_FLOAT, MPI_SUM, ctx.comm));
  }
  store_result(chunk.data(), recv.count, op, ctx.size, recv, 0);
}

void allgather_native(Context& ctx, ConstTensorView send, TensorView recv) {
  if (ctx.group != nullptr) return ctx.group->allgather(send, recv);
  const int n = mpi_count(send.count, "native allgather: elements per rank");
  const MPI_Datatype type = mpi_type(send.dtype);
  const void* own = slice(recv, static_cast<size_t>(ctx.rank) * send.count, send.count).data;
  const void* from = send.data == own ? MPI_IN_PLACE : send.data;
  HYCC_CHECK_MPI(MPI_Allgather(from, n, type, recv.data, n, type, ctx.comm));
}

void broadcast_native(Context& ctx, TensorView buffer, int root) {
  if (ctx.group != nullptr) return ctx.group->broadcast(buffer, root);
  const int n = mpi_count(buffer.count, "native broadcast: element count");
  HYCC_CHECK_MPI(MPI_Bcast(buffer.data, n, mpi_type(buffer.dtype), root, ctx.comm));
}

void alltoall_native(Context& ctx, ConstTensorView send, TensorView recv) {
  if (ctx.group != nullptr) return ctx.group->alltoall(send, recv);
  const int block =
      mpi_count(send.count / static_cast<size_t>(ctx.size), "native alltoall: elements per block");
  const MPI_Datatype type = mpi_type(send.dtype);
  const void* from = send.data == recv.data ? MPI_IN_PLACE : send.data;
  HYCC_CHECK_MPI(MPI_Alltoall(from, block, type, recv.data, block, type, ctx.comm));
}

}  // namespace hycc::coll
