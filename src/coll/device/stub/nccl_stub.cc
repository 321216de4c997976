// The NCCL transport in a build without CUDA or without nccl.h: Unavailable, and NCCL is never
// usable, so DeviceTransport::kAuto picks staged MPI.
#include "coll/device/transport.h"
#include "hycc/error.h"

namespace hycc::coll::device {

std::unique_ptr<Transport> make_nccl_transport(const Communicator&, DeviceStream, bool) {
  throw Unavailable(
      tagged("coll:nccl", "NCCL transport: hycc was built without CUDA or without ", "nccl.h"));
}

bool nccl_usable(const Communicator&) { return false; }

}  // namespace hycc::coll::device
