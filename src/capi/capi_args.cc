// The C arguments of the collectives, checked and converted (capi_args.h).
#include "capi/capi_args.h"

#include <cstdint>
#include <string>

#include "capi/capi_internal.h"
#include "hycc/config.h"
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

std::vector<std::vector<size_t>> to_pieces(const size_t* pieces, size_t length,
                                           const char* function) {
  if (pieces == nullptr && length > 0) {
    throw InvalidArgument(
        tagged("capi", function, ": options->pieces is NULL with pieces_length ", length));
  }
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < length;) {
    const size_t dims = pieces[i];
    if (dims == 0 || dims > length - i - 1) {
      throw InvalidArgument(tagged("capi", function, ": options->pieces[", i, "] is ", dims,
                                   "; each tensor of the bucket is its number of dimensions (1 or "
                                   "more), then that many dimensions, and ",
                                   length - i - 1, " values follow"));
    }
    out.emplace_back(pieces + i + 1, pieces + i + 1 + dims);
    i += dims + 1;
  }
  return out;
}

static_assert(HYCC_CHECK_AUTO == static_cast<int>(ArgumentCheck::kAuto) &&
              HYCC_CHECK_ALWAYS == static_cast<int>(ArgumentCheck::kAlways) &&
              HYCC_CHECK_NEVER == static_cast<int>(ArgumentCheck::kNever));

ArgumentCheck to_argument_check(int check, const char* function) {
  require(check >= HYCC_CHECK_AUTO && check <= HYCC_CHECK_NEVER, function,
          "options->check_arguments is not a hycc_arg_check");
  return static_cast<ArgumentCheck>(check);
}

void check_abi_version(int abi_version, const char* function) {
  if (abi_version == HYCC_ABI_VERSION) return;
  if (abi_version == 0) {
    throw InvalidArgument(
        tagged("capi", function,
               ": options not made by hycc_options_init / "
               "hycc_device_options_init (abi_version 0); initialize them first"));
  }
  throw InvalidArgument(tagged("capi", function, ": options laid out by a hycc.h of ABI version ",
                               abi_version, ", this library has ABI version ", HYCC_ABI_VERSION,
                               " (libhycc_c.so ", HYCC_VERSION,
                               "); build the program against the hycc.h of the library it runs "
                               "with"));
}

void copy_specific(const hycc_options& in, CollectiveOptions& out, const char* function) {
  require(in.algorithm >= HYCC_ALGO_AUTO && in.algorithm <= HYCC_ALGO_TWO_LEVEL, function,
          "options->algorithm is not a hycc_algorithm");
  out.algorithm = static_cast<Algorithm>(in.algorithm);
}

void copy_specific(const hycc_device_options& in, DeviceCollectiveOptions& out,
                   const char* function) {
  require(in.backend == HYCC_DEVICE_CUDA || in.backend == HYCC_DEVICE_HOST_EMULATION, function,
          "options->backend is not a hycc_device_backend");
  require(in.transport >= HYCC_TRANSPORT_AUTO && in.transport <= HYCC_TRANSPORT_NCCL, function,
          "options->transport is not a hycc_device_transport");
  out.stream = static_cast<DeviceStream>(in.stream);
  out.backend = static_cast<DeviceBackend>(in.backend);
  out.transport = static_cast<DeviceTransport>(in.transport);
  out.checksum = in.checksum != 0;
  out.stream_ordered = in.stream_ordered != 0;
}

}  // namespace hycc::capi
