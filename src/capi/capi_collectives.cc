// The C API's collectives and point to point on host buffers: C arguments checked and converted
// (capi_args.h), then the C++ collectives (include/hycc/collectives.h) run.
#include <cstddef>
#include <cstdint>

#include "capi/capi_args.h"
#include "capi/capi_internal.h"
#include "hycc/collectives.h"

using hycc::capi::guarded;
using hycc::capi::HostCallOptions;
using hycc::capi::require;
using hycc::capi::to_op;

extern "C" {

void hycc_options_init_abi(hycc_options* options, int abi_version) {
  if (options == nullptr) return;
  if (abi_version != HYCC_ABI_VERSION) {
    options->abi_version = abi_version;  // the only field every layout has there; calls refuse it
    return;
  }
  const hycc::CollectiveOptions defaults;
  *options = hycc_options{};
  options->abi_version = HYCC_ABI_VERSION;
  options->algorithm = static_cast<int>(defaults.algorithm);
  options->threshold_bytes = defaults.threshold_bytes;
  options->segment_bytes = defaults.segment_bytes;
  options->check_arguments = static_cast<int>(defaults.check_arguments);
}

hycc_status hycc_chunk_range(size_t total, int size, int rank, size_t* offset, size_t* count) {
  return guarded([&] {
    const char* fn = "hycc_chunk_range";
    require(offset != nullptr && count != nullptr, fn, "offset or count (the result) is NULL");
    require(size >= 1 && rank >= 0 && rank < size, fn, "needs 0 <= rank < size");
    const hycc::ChunkRange r = hycc::chunk_range(total, size, rank);
    *offset = r.offset;
    *count = r.count;
  });
}

hycc_status hycc_allreduce(const void* send, void* recv, size_t count, int dtype, int op,
                           MPI_Comm comm, const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_allreduce";
    const auto a = hycc::capi::same_count_tensors(send, recv, count, dtype, comm, fn);
    const HostCallOptions o(options, fn);
    hycc::allreduce(a.comm, a.send, a.recv, to_op(op, fn), o.get());
    o.publish();
  });
}

hycc_status hycc_reduce_scatter(const void* send, size_t send_count, void* recv, int dtype, int op,
                                MPI_Comm comm, const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_reduce_scatter";
    const auto a = hycc::capi::reduce_scatter_tensors(send, send_count, recv, dtype, comm, fn);
    const HostCallOptions o(options, fn);
    hycc::reduce_scatter(a.comm, a.send, a.recv, to_op(op, fn), o.get());
    o.publish();
  });
}

hycc_status hycc_allgather(const void* send, size_t send_count, void* recv, int dtype,
                           MPI_Comm comm, const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_allgather";
    const auto a = hycc::capi::allgather_tensors(send, send_count, recv, dtype, comm, fn);
    const HostCallOptions o(options, fn);
    hycc::allgather(a.comm, a.send, a.recv, o.get());
    o.publish();
  });
}

hycc_status hycc_broadcast(void* buffer, size_t count, int dtype, int root, MPI_Comm comm,
                           const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_broadcast";
    const auto a = hycc::capi::one_tensor(buffer, count, dtype, comm, fn);
    const HostCallOptions o(options, fn);
    hycc::broadcast(a.comm, a.data, root, o.get());
    o.publish();
  });
}

hycc_status hycc_alltoall(const void* send, void* recv, size_t count, int dtype, MPI_Comm comm,
                          const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_alltoall";
    const auto a = hycc::capi::same_count_tensors(send, recv, count, dtype, comm, fn);
    const HostCallOptions o(options, fn);
    hycc::alltoall(a.comm, a.send, a.recv, o.get());
    o.publish();
  });
}

hycc_status hycc_send(const void* data, size_t count, int dtype, int dest, int tag, MPI_Comm comm,
                      const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_send";
    const auto a = hycc::capi::one_tensor(data, count, dtype, comm, fn);
    const HostCallOptions o(options, fn);
    hycc::send(a.comm, a.data, dest, tag, o.get());
    o.publish();
  });
}

hycc_status hycc_recv(void* data, size_t count, int dtype, int source, int tag, MPI_Comm comm,
                      int* source_out) {
  return guarded([&] {
    const auto a = hycc::capi::one_tensor(data, count, dtype, comm, "hycc_recv");
    const hycc::RecvStatus status = hycc::recv(a.comm, a.data, source, tag);
    if (source_out != nullptr) *source_out = status.source;
  });
}

}  // extern "C"
