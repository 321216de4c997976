// The C API on device buffers: the device codecs (codec_device.h) and the device collectives
// (collectives_device.h).
#include <cstddef>
#include <cstdint>

#include "capi/capi_args.h"
#include "capi/capi_internal.h"
#include "hycc/codec_device.h"
#include "hycc/collectives_device.h"
#include "hycc/device.h"

using hycc::capi::codec_of;
using hycc::capi::DeviceCallOptions;
using hycc::capi::guarded;
using hycc::capi::require;
using hycc::capi::require_buffer;
using hycc::capi::require_count;
using hycc::capi::to_dtype;
using hycc::capi::to_op;

extern "C" {

int hycc_device_count(void) {
  try {
    return hycc::device_count();
  } catch (...) {
    return 0;
  }
}

int hycc_codec_device_kernels(const hycc_codec* codec) {
  return codec != nullptr && hycc::device_supports(codec->config) ? 1 : 0;
}

hycc_status hycc_max_payload_bytes(const hycc_codec* codec, int dtype, size_t count,
                                   size_t* bytes) {
  return guarded([&] {
    const char* fn = "hycc_max_payload_bytes";
    require(bytes != nullptr, fn, "bytes (the result) is NULL");
    const hycc::DType t = to_dtype(dtype, fn);
    require_count(count, t, fn, "tensor");
    *bytes = codec_of(codec, fn).config.codec().max_payload_bytes(t, count);
  });
}

hycc_status hycc_encode_device(const hycc_codec* codec, int dtype, size_t count, const void* in,
                               void* out, size_t capacity, uint64_t seed, void* stream,
                               size_t* bytes) {
  return guarded([&] {
    const char* fn = "hycc_encode_device";
    require(bytes != nullptr, fn, "bytes (the result) is NULL");
    *bytes = 0;
    const hycc::DType t = to_dtype(dtype, fn);
    require_buffer(in, count, t, fn, "in");
    require(out != nullptr, fn, "out is NULL");
    *bytes =
        hycc::encode_device(codec_of(codec, fn).config, {t, count, in}, out, capacity,
                            hycc::CompressOptions{seed}, static_cast<hycc::DeviceStream>(stream));
  });
}

hycc_status hycc_decode_device(const hycc_codec* codec, const void* payload, size_t bytes,
                               int dtype, size_t count, void* out, void* stream) {
  return guarded([&] {
    const char* fn = "hycc_decode_device";
    const hycc::DType t = to_dtype(dtype, fn);
    require(payload != nullptr || bytes == 0, fn, "payload is NULL");
    require_buffer(out, count, t, fn, "out");
    hycc::decode_device(codec_of(codec, fn).config, payload, bytes, {t, count, out},
                        static_cast<hycc::DeviceStream>(stream));
  });
}

void hycc_device_options_init_abi(hycc_device_options* options, int abi_version) {
  if (options == nullptr) return;
  if (abi_version != HYCC_ABI_VERSION) {
    options->abi_version = abi_version;  // as hycc_options_init_abi
    return;
  }
  const hycc::DeviceCollectiveOptions defaults;
  *options = hycc_device_options{};
  options->abi_version = HYCC_ABI_VERSION;
  options->segment_bytes = defaults.segment_bytes;
  options->threshold_bytes = defaults.threshold_bytes;
  options->backend = static_cast<int>(defaults.backend);
  options->transport = static_cast<int>(defaults.transport);
  options->checksum = defaults.checksum ? 1 : 0;
  options->stream_ordered = defaults.stream_ordered ? 1 : 0;
  options->check_arguments = static_cast<int>(defaults.check_arguments);
}

hycc_status hycc_allreduce_device(const void* send, void* recv, size_t count, int dtype, int op,
                                  MPI_Comm comm, const hycc_device_options* options) {
  return guarded([&] {
    const char* fn = "hycc_allreduce_device";
    const auto a = hycc::capi::same_count_tensors(send, recv, count, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    hycc::allreduce_device(a.comm, a.send, a.recv, to_op(op, fn), o.get());
    o.publish();
  });
}

hycc_status hycc_reduce_scatter_device(const void* send, size_t send_count, void* recv, int dtype,
                                       int op, MPI_Comm comm, const hycc_device_options* options) {
  return guarded([&] {
    const char* fn = "hycc_reduce_scatter_device";
    const auto a = hycc::capi::reduce_scatter_tensors(send, send_count, recv, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    hycc::reduce_scatter_device(a.comm, a.send, a.recv, to_op(op, fn), o.get());
    o.publish();
  });
}

hycc_status hycc_allgather_device(const void* send, size_t send_count, void* recv, int dtype,
                                  MPI_Comm comm, const hycc_device_options* options) {
  return guarded([&] {
    const char* fn = "hycc_allgather_device";
    const auto a = hycc::capi::allgather_tensors(send, send_count, recv, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    hycc::allgather_device(a.comm, a.send, a.recv, o.get());
    o.publish();
  });
}

hycc_status hycc_broadcast_device(void* buffer, size_t count, int dtype, int root, MPI_Comm comm,
                                  const hycc_device_options* options) {
  return guarded([&] {
    const char* fn = "hycc_broadcast_device";
    const auto a = hycc::capi::one_tensor(buffer, count, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    hycc::broadcast_device(a.comm, a.data, root, o.get());
    o.publish();
  });
}

hycc_status hycc_alltoall_device(const void* send, void* recv, size_t count, int dtype,
                                 MPI_Comm comm, const hycc_device_options* options) {
  return guarded([&] {
    const char* fn = "hycc_alltoall_device";
    const auto a = hycc::capi::same_count_tensors(send, recv, count, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    hycc::alltoall_device(a.comm, a.send, a.recv, o.get());
    o.publish();
  });
}

hycc_status hycc_send_device(const void* data, size_t count, int dtype, int dest, int tag,
                             MPI_Comm comm, const hycc_device_options* options) {
  return guarded([&] {
    const char* fn = "hycc_send_device";
    const auto a = hycc::capi::one_tensor(data, count, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    hycc::send_device(a.comm, a.data, dest, tag, o.get());
    o.publish();
  });
}

hycc_status hycc_recv_device(void* data, size_t count, int dtype, int source, int tag,
                             MPI_Comm comm, const hycc_device_options* options, int* source_out) {
  return guarded([&] {
    const char* fn = "hycc_recv_device";
    const auto a = hycc::capi::one_tensor(data, count, dtype, comm, fn);
    const DeviceCallOptions o(options, fn);
    const hycc::RecvStatus status = hycc::recv_device(a.comm, a.data, source, tag, o.get());
    if (source_out != nullptr) *source_out = status.source;
  });
}

}  // extern "C"
