// The choice of a device call's transport (transport.h).
#include "comm/transport.h"

#include <utility>

namespace hycc::comm {

std::unique_ptr<Transport> make_transport(const Communicator& comm, DeviceOps& ops,
                                          const DeviceAlgorithmOptions& options, int tag,
                                          bool collective) {
  DeviceTransport t = options.transport;
  if (t == DeviceTransport::kAuto) {
    t = options.backend == DeviceBackend::kCuda && collective && nccl_usable(comm)
            ? DeviceTransport::kNccl
            : DeviceTransport::kStagedMpi;
  }
  std::unique_ptr<Transport> inner = t == DeviceTransport::kNccl
                                         ? make_nccl_transport(comm, ops, options, tag, collective)
                                         : make_staged_transport(ops, comm, tag);
  return options.checksum ? with_checksums(ops, std::move(inner)) : std::move(inner);
}

}  // namespace hycc::comm
