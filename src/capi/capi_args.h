// The C arguments of the collectives, checked and converted into what the C++ calls take; shared
// by the host (capi_collectives.cc) and device (capi_device.cc) entry points.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "capi/capi_internal.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/comm.h"
#include "hycc/dtype.h"
#include "hycc/hycc.h"

namespace hycc::capi {

// A send and a receive tensor on a communicator.
struct TwoTensors {
  Communicator comm;
  ConstTensorView send;
  TensorView recv;
};

// One tensor on a communicator.
struct OneTensor {
  Communicator comm;
  TensorView data;
};

// allreduce and alltoall: count elements each; send MPI_IN_PLACE means send = recv.
TwoTensors same_count_tensors(const void* send, void* recv, size_t count, int dtype, MPI_Comm comm,
                              const char* function);
// reduce_scatter: recv holds this rank's chunk of send_count.
TwoTensors reduce_scatter_tensors(const void* send, size_t send_count, void* recv, int dtype,
                                  MPI_Comm comm, const char* function);
// allgather: recv holds size * send_count; send MPI_IN_PLACE means this rank's block of recv.
TwoTensors allgather_tensors(const void* send, size_t send_count, void* recv, int dtype,
                             MPI_Comm comm, const char* function);
// broadcast, send and recv (the pointer is only read for send).
OneTensor one_tensor(const void* data, size_t count, int dtype, MPI_Comm comm,
                     const char* function);

ReduceOp to_op(int op, const char* function);

// The tensors of a bucket from hycc_options.pieces (per tensor: its number of dimensions, then
// the dimensions). Throws InvalidArgument for a malformed list.
std::vector<std::vector<size_t>> to_pieces(const size_t* pieces, size_t length,
                                           const char* function);

// hycc_options.check_arguments / hycc_device_options.check_arguments as an ArgumentCheck.
ArgumentCheck to_argument_check(int check, const char* function);

// Refuses options whose abi_version is not this library's HYCC_ABI_VERSION: not made by the init
// function (0), or laid out by another hycc.h.
void check_abi_version(int abi_version, const char* function);

// The fields only one of the two option structs has (host: the algorithm; device: stream,
// backend, transport, checksum), checked and copied.
void copy_specific(const hycc_options& in, CollectiveOptions& out, const char* function);
void copy_specific(const hycc_device_options& in, DeviceCollectiveOptions& out,
                   const char* function);

// hycc_options / hycc_device_options as the C++ options of a call (NULL: the defaults); the
// call's statistics land in a member until publish() copies them to the caller's.
template <typename COptions, typename CppOptions>
class CallOptions {
 public:
  CallOptions(const COptions* options, const char* function) {
    if (options == nullptr) return;
    check_abi_version(options->abi_version, function);
    if (options->codec != nullptr) options_.codec = options->codec->config;
    if (options->engine != nullptr) options_.policy = &options->engine->engine;
    options_.threshold_bytes = options->threshold_bytes;
    options_.segment_bytes = options->segment_bytes;
    options_.seed = options->seed;
    options_.tag = options->tag;
    options_.key = options->key;
    pieces_ = to_pieces(options->pieces, options->pieces_length, function);
    options_.pieces = pieces_;
    options_.check_arguments = to_argument_check(options->check_arguments, function);
    copy_specific(*options, options_, function);
    if (options->stats != nullptr) {
      out_ = options->stats;
      options_.stats = &stats_;
    }
  }

  CallOptions(const CallOptions&) = delete;  // options_ points into pieces_
  CallOptions& operator=(const CallOptions&) = delete;

  const CppOptions& get() const { return options_; }
  // Copies what the call did into the caller's hycc_call_stats (when it asked for them).
  void publish() const;

 private:
  CppOptions options_;
  CollectiveStats stats_;
  hycc_call_stats* out_ = nullptr;
  std::vector<std::vector<size_t>> pieces_;
};

template <typename COptions, typename CppOptions>
void CallOptions<COptions, CppOptions>::publish() const {
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
  out_->host_syncs = stats_.host_syncs;
}

using HostCallOptions = CallOptions<hycc_options, CollectiveOptions>;
using DeviceCallOptions = CallOptions<hycc_device_options, DeviceCollectiveOptions>;

}  // namespace hycc::capi
