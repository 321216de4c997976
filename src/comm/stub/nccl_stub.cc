// NCCL in a build without CUDA or without nccl.h: Unavailable, and NCCL is never usable, so
// DeviceTransport::kAuto picks staged MPI. (The host emulation's NCCL transport runs on the MPI
// stand-in, mpi_nccl_link.cc, in every build.)
#include "comm/nccl_link.h"
#include "comm/transport.h"
#include "hycc/error.h"

namespace hycc::comm {

std::unique_ptr<NcclLink> make_cuda_nccl_link(const Communicator&, DeviceStream, bool) {
  throw Unavailable(
      tagged("coll:nccl", "NCCL transport: hycc was built without CUDA or without ", "nccl.h"));
}

bool nccl_usable(const Communicator&) { return false; }

void queue_nccl_collective(const Communicator&, DeviceStream, NcclOp, const void*, void*, size_t,
                           int) {
  throw Unavailable(
      tagged("coll:nccl", "NCCL collectives: hycc was built without CUDA or without ", "nccl.h"));
}

}  // namespace hycc::comm
