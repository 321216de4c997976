// The choice of a device call's transport (transport.h).
#include "comm/transport.h"

#include <utility>

namespace hycc::comm {

bool fixed_payload_size(const CodecConfig& codec) {
  // The payload of one element: a codec whose regular size is its bound for every dtype has no
  // irregular case at all (none, the casts); quant and zfp:rate have larger raw layouts.
  for (const DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const size_t count : {size_t{1}, size_t{1000}}) {
      const std::optional<size_t> regular = codec.codec().regular_payload_bytes(d, count);
      if (!regular || *regular != codec.codec().max_payload_bytes(d, count)) return false;
    }
  }
  return true;
}

std::unique_ptr<Transport> make_transport(const Communicator& comm, DeviceOps& ops,
                                          const DeviceAlgorithmOptions& options, int tag,
                                          bool collective, PayloadSizes sizes) {
  DeviceTransport t = options.transport;
  if (t == DeviceTransport::kAuto) {
    t = options.backend == DeviceBackend::kCuda && collective && nccl_usable(comm)
            ? DeviceTransport::kNccl
            : DeviceTransport::kStagedMpi;
  }
  std::unique_ptr<Transport> inner =
      t == DeviceTransport::kNccl ? make_nccl_transport(comm, ops, options, tag, collective, sizes)
                                  : make_staged_transport(ops, comm, tag);
  return options.checksum ? with_checksums(ops, std::move(inner)) : std::move(inner);
}

}  // namespace hycc::comm
