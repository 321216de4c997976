// The C arguments of the collectives, checked and converted (capi_args.h).
#include "capi/capi_args.h"

#include <cstdint>
#include <string>

#include "capi/capi_internal.h"
#include "hycc/error.h"

namespace hycc::capi {

Communicator communicator_of(MPI_Comm comm, const char* function) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    throw CommError(
        tagged("capi", function, ": MPI is ", finalized ? "already finalized" : "not initialized"));
  }
  if (comm == MPI_COMM_NULL)
    throw InvalidArgument(tagged("capi", function, ": comm is MPI_COMM_NULL"));
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  HYCC_CHECK_MPI(MPI_Comm_get_name(comm, name, &length));
  return Communicator::wrap(comm, std::string(name, static_cast<size_t>(length)));
}

namespace {

bool in_place(const void* send) { return send == MPI_IN_PLACE; }

}  // namespace

TwoTensors same_count_tensors(const void* send, void* recv, size_t count, int dtype, MPI_Comm comm,
                              const char* function) {
  const DType t = to_dtype(dtype, function);
  if (in_place(send)) send = recv;
  require_buffer(send, count, t, function, "send");
  require_buffer(recv, count, t, function, "recv");
  return {communicator_of(comm, function), {t, count, send}, {t, count, recv}};
}

TwoTensors reduce_scatter_tensors(const void* send, size_t send_count, void* recv, int dtype,
                                  MPI_Comm comm, const char* function) {
  const DType t = to_dtype(dtype, function);
  Communicator c = communicator_of(comm, function);
  const size_t recv_count = chunk_range(send_count, c.size(), c.rank()).count;
  require_buffer(send, send_count, t, function, "send");
  require_buffer(recv, recv_count, t, function, "recv");
  return {std::move(c), {t, send_count, send}, {t, recv_count, recv}};
}

TwoTensors allgather_tensors(const void* send, size_t send_count, void* recv, int dtype,
                             MPI_Comm comm, const char* function) {
  const DType t = to_dtype(dtype, function);
  Communicator c = communicator_of(comm, function);
  const auto ranks = static_cast<size_t>(c.size());
  require(send_count <= SIZE_MAX / ranks, function, "size * send_count overflows");
  const size_t recv_count = ranks * send_count;
  require_buffer(recv, recv_count, t, function, "recv");
  if (in_place(send)) {
    send = static_cast<const std::byte*>(recv) +
           static_cast<size_t>(c.rank()) * send_count * dtype_size(t);
  }
  require_buffer(send, send_count, t, function, "send");
  return {std::move(c), {t, send_count, send}, {t, recv_count, recv}};
}

OneTensor one_tensor(const void* data, size_t count, int dtype, MPI_Comm comm,
                     const char* function) {
  const DType t = to_dtype(dtype, function);
  require_buffer(data, count, t, function, "data");
  // Writable for broadcast and recv; send only reads it (as a ConstTensorView).
  return {communicator_of(comm, function), {t, count, const_cast<void*>(data)}};
}

ReduceOp to_op(int op, const char* function) {
  require(op == HYCC_SUM || op == HYCC_AVERAGE, function, "op is not HYCC_SUM or HYCC_AVERAGE");
  return static_cast<ReduceOp>(op);
}

void publish_stats(const CollectiveStats& stats, hycc_call_stats* out) {
  if (out == nullptr) return;
  *out = hycc_call_stats{};
  out->algorithm = static_cast<int>(stats.algorithm);
  out->compressed = stats.compressed ? 1 : 0;
  out->message_bytes = stats.message_bytes;
  out->raw_bytes = stats.raw_bytes;
  out->wire_bytes = stats.wire_bytes;
  out->streams = stats.streams;
  out->codec_seconds = stats.codec_seconds;
  out->seconds = stats.seconds;
}

}  // namespace hycc::capi
