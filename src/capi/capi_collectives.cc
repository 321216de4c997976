// The C API's collectives and point to point: C arguments checked and converted, then the C++
// collectives (include/hycc/collectives.h) run.
#include <cstddef>
#include <cstdint>
#include <string>

#include "capi/capi_internal.h"
#include "hycc/collectives.h"
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

}  // namespace hycc::capi

namespace {

using hycc::capi::communicator_of;
using hycc::capi::guarded;
using hycc::capi::require;
using hycc::capi::require_buffer;
using hycc::capi::to_dtype;

// hycc_options as CollectiveOptions, and the call's statistics back into hycc_call_stats.
class CallOptions {
 public:
  CallOptions(const hycc_options* options, const char* function) {
    if (options == nullptr) return;
    if (options->codec != nullptr) options_.codec = options->codec->config;
    if (options->engine != nullptr) options_.policy = &options->engine->engine;
    const int algorithm = options->algorithm;
    require(algorithm >= HYCC_ALGO_AUTO && algorithm <= HYCC_ALGO_PAIRWISE, function,
            "options->algorithm is not a hycc_algorithm");
    options_.algorithm = static_cast<hycc::Algorithm>(algorithm);
    options_.threshold_bytes = options->threshold_bytes;
    options_.segment_bytes = options->segment_bytes;
    options_.seed = options->seed;
    options_.tag = options->tag;
    options_.key = options->key;
    if (options->stats != nullptr) {
      out_ = options->stats;
      options_.stats = &stats_;
    }
  }

  const hycc::CollectiveOptions& get() const { return options_; }

  // Copies the statistics of the call that just ran (options.stats).
  void publish() const {
    if (out_ == nullptr) return;
    *out_ = hycc_call_stats{};
    out_->algorithm = static_cast<int>(stats_.algorithm);
    out_->compressed = stats_.compressed ? 1 : 0;
    out_->message_bytes = stats_.message_bytes;
    out_->raw_bytes = stats_.raw_bytes;
    out_->wire_bytes = stats_.wire_bytes;
    out_->streams = stats_.streams;
    out_->codec_seconds = stats_.codec_seconds;
    out_->seconds = stats_.seconds;
  }

 private:
  hycc::CollectiveOptions options_;
  hycc::CollectiveStats stats_;
  hycc_call_stats* out_ = nullptr;
};

hycc::ReduceOp to_op(int op, const char* function) {
  require(op == HYCC_SUM || op == HYCC_AVERAGE, function, "op is not HYCC_SUM or HYCC_AVERAGE");
  return static_cast<hycc::ReduceOp>(op);
}

bool in_place(const void* send) { return send == MPI_IN_PLACE; }

}  // namespace

extern "C" {

void hycc_options_init(hycc_options* options) {
  if (options == nullptr) return;
  const hycc::CollectiveOptions defaults;
  *options = hycc_options{};
  options->algorithm = static_cast<int>(defaults.algorithm);
  options->threshold_bytes = defaults.threshold_bytes;
  options->segment_bytes = defaults.segment_bytes;
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
    const hycc::DType t = to_dtype(dtype, fn);
    if (in_place(send)) send = recv;
    require_buffer(send, count, t, fn, "send");
    require_buffer(recv, count, t, fn, "recv");
    const CallOptions o(options, fn);
    hycc::allreduce(communicator_of(comm, fn), {t, count, send}, {t, count, recv}, to_op(op, fn),
                    o.get());
    o.publish();
  });
}

hycc_status hycc_reduce_scatter(const void* send, size_t send_count, void* recv, int dtype, int op,
                                MPI_Comm comm, const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_reduce_scatter";
    const hycc::DType t = to_dtype(dtype, fn);
    const hycc::Communicator c = communicator_of(comm, fn);
    const size_t recv_count = hycc::chunk_range(send_count, c.size(), c.rank()).count;
    require_buffer(send, send_count, t, fn, "send");
    require_buffer(recv, recv_count, t, fn, "recv");
    const CallOptions o(options, fn);
    hycc::reduce_scatter(c, {t, send_count, send}, {t, recv_count, recv}, to_op(op, fn), o.get());
    o.publish();
  });
}

hycc_status hycc_allgather(const void* send, size_t send_count, void* recv, int dtype,
                           MPI_Comm comm, const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_allgather";
    const hycc::DType t = to_dtype(dtype, fn);
    const hycc::Communicator c = communicator_of(comm, fn);
    const auto ranks = static_cast<size_t>(c.size());
    require(send_count <= SIZE_MAX / ranks, fn, "size * send_count overflows");
    const size_t recv_count = ranks * send_count;
    require_buffer(recv, recv_count, t, fn, "recv");
    if (in_place(send)) {
      send = static_cast<const std::byte*>(recv) +
             static_cast<size_t>(c.rank()) * send_count * hycc::dtype_size(t);
    }
    require_buffer(send, send_count, t, fn, "send");
    const CallOptions o(options, fn);
    hycc::allgather(c, {t, send_count, send}, {t, recv_count, recv}, o.get());
    o.publish();
  });
}

hycc_status hycc_broadcast(void* buffer, size_t count, int dtype, int root, MPI_Comm comm,
                           const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_broadcast";
    const hycc::DType t = to_dtype(dtype, fn);
    require_buffer(buffer, count, t, fn, "buffer");
    const CallOptions o(options, fn);
    hycc::broadcast(communicator_of(comm, fn), {t, count, buffer}, root, o.get());
    o.publish();
  });
}

hycc_status hycc_alltoall(const void* send, void* recv, size_t count, int dtype, MPI_Comm comm,
                          const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_alltoall";
    const hycc::DType t = to_dtype(dtype, fn);
    if (in_place(send)) send = recv;
    require_buffer(send, count, t, fn, "send");
    require_buffer(recv, count, t, fn, "recv");
    const CallOptions o(options, fn);
    hycc::alltoall(communicator_of(comm, fn), {t, count, send}, {t, count, recv}, o.get());
    o.publish();
  });
}

hycc_status hycc_send(const void* data, size_t count, int dtype, int dest, int tag, MPI_Comm comm,
                      const hycc_options* options) {
  return guarded([&] {
    const char* fn = "hycc_send";
    const hycc::DType t = to_dtype(dtype, fn);
    require_buffer(data, count, t, fn, "data");
    const CallOptions o(options, fn);
    hycc::send(communicator_of(comm, fn), {t, count, data}, dest, tag, o.get());
    o.publish();
  });
}

hycc_status hycc_recv(void* data, size_t count, int dtype, int source, int tag, MPI_Comm comm,
                      int* source_out) {
  return guarded([&] {
    const char* fn = "hycc_recv";
    const hycc::DType t = to_dtype(dtype, fn);
    require_buffer(data, count, t, fn, "data");
    const hycc::RecvStatus status =
        hycc::recv(communicator_of(comm, fn), {t, count, data}, source, tag);
    if (source_out != nullptr) *source_out = status.source;
  });
}

}  // extern "C"
